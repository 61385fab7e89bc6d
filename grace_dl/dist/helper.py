"""``grace_dl.dist.helper``: GRACE's factory."""
from deepreduce.params import grace_from_params

__all__ = ["grace_from_params"]
