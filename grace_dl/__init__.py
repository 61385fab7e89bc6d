"""GRACE's import paths, served by deepreduce, so scripts written for GRACE's
torch.distributed flavour (``grace_dl.dist``) run unchanged."""
