"""The memory and communicator each GRACE compressor is conventionally run with.

GRACE leaves the pairing to the user; these are its own conventions (its README and
examples): sparsifiers keep what they drop in a residual memory and need allgather
(their payloads cannot be summed), random-k shares its indices and so sums with
allreduce, quantizers allgather their frames, and methods with a memory of their own
(dgc, efsignsgd, powersgd) use it. Tests and benchmarks read this table so that "every
method with its natural memory and communicator" means one thing everywhere.
"""
from .registry import COMPRESSOR_ALIASES

# compressor -> (memory, communicator)
PAIRINGS = {
    "none": ("none", "allreduce"),
    "fp16": ("none", "allreduce"),
    "qsgd": ("none", "allgather"),
    "terngrad": ("none", "allgather"),
    "natural": ("none", "allgather"),
    "onebit": ("residual", "allgather"),  # 1-bit SGD is defined with error feedback (Seide et al. 2014)
    "signsgd": ("none", "allgather"),
    "signum": ("none", "allgather"),
    "efsignsgd": ("efsignsgd", "allgather"),
    "randomk": ("residual", "allreduce"),
    "topk": ("residual", "allgather"),
    "threshold": ("residual", "allgather"),
    "dgc": ("dgc", "allgather"),
    "powersgd": ("powersgd", "allreduce"),
    "adaq": ("residual", "allgather"),
    "inceptionn": ("none", "allgather"),
    "sketch": ("none", "allgather"),
    "8bit": ("none", "allgather"),
    "3lc": ("residual", "allgather"),  # 3LC is defined with error feedback (Lim et al. 2019)
}


def natural_params(compressor, **overrides):
    """The params dict for ``compressor`` with its natural memory and communicator;
    ``overrides`` are added on top (e.g. compress_ratio=0.01)."""
    key = COMPRESSOR_ALIASES.get(compressor, compressor)
    if key not in PAIRINGS:
        valid = ", ".join(sorted(PAIRINGS))
        raise ValueError(f"no natural pairing for compressor {compressor!r}; known: {valid}")
    memory, communicator = PAIRINGS[key]
    params = {"compressor": compressor, "memory": memory, "communicator": communicator}
    params.update(overrides)
    return params

