"""PyTorch integration: a DistributedDataParallel communication hook running any
deepreduce params dict. Importing this subpackage needs torch (``deepreduce[torch]``)."""
try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError("deepreduce.torch needs PyTorch: pip install 'deepreduce[torch]'") from exc

from .ddp import DeepReduceHookState, ddp_hook

__all__ = ["DeepReduceHookState", "ddp_hook"]
