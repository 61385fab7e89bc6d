"""``grace_dl.torch.helper``: GRACE's factory for its Horovod-PyTorch flavour. Its keys,
names and defaults are those of the torch.distributed flavour; the world size comes from
the transport (``hvd.init()`` binds it) instead of ``hvd.size()``."""
from deepreduce.params import grace_from_params

__all__ = ["grace_from_params"]
