"""``grace_dl.dist.helper``: GRACE's factory, and DeepReduce's accounting helpers."""
from deepreduce.accounting import tensor_bits, timer, volume
from deepreduce.params import grace_from_params

__all__ = ["grace_from_params", "tensor_bits", "volume", "timer"]
