"""``grace_from_params``: GRACE's one-call factory, with its keys and defaults."""
from .autooff import AutoOff
from .registry import COMMUNICATORS, COMPRESSOR_ALIASES, COMPRESSORS, MEMORIES, lookup

# Keys and defaults exactly as GRACE's torch.distributed helper reads them.
DEFAULTS = {
    "compressor": "none",
    "memory": "none",
    "communicator": "allreduce",
    "compress_ratio": 0.3,
    "quantum_num": 127,
    "bucket_size": 128,
    "threshold": 0.01,
    "momentum": 0.9,
    "lr": 0.1,
    "compress_rank": 1,
    "gradient_clipping": False,
    "kernel": "torch",   # accepted and ignored: the kernel is always the C core
    "world_size": None,  # None: taken from the transport at the first step
    "transport": None,   # a Transport, 'torch', 'mpi', 'local', or None to detect
    "auto_off": False,   # send a tensor dense when compressing it costs more than it saves
    "bandwidth": None,   # link bytes/s for auto_off's cost model (None: measured)
}

# Defaults that differ by compressor, applied under the caller's keys: LGC's top-k ratio is
# the paper's 1e-3, not GRACE's 0.3.
COMPRESSOR_DEFAULTS = {"lgc": {"compress_ratio": 1e-3}}


def resolve_params(params):
    """params over the defaults, checked. Unknown keys are kept (codec wrappers read them)."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    merged = dict(DEFAULTS)
    merged.update(COMPRESSOR_DEFAULTS.get(params.get("compressor"), {}))
    merged.update(params)
    return merged


def grace_from_params(params):
    """Build the communicator (holding its compressor and memory) that ``params`` names.

    The communicator is the whole bundle: ``grc.compressor``, ``grc.memory`` and
    ``grc.world_size`` are public, and ``grc.step(grad, name)`` runs one exchange. It may
    be built before the process group exists; the transport is bound at the first step.
    """
    p = resolve_params(params)
    compressor = lookup(COMPRESSORS, "compressor", p["compressor"], COMPRESSOR_ALIASES).from_params(p)
    memory = lookup(MEMORIES, "memory", p["memory"]).from_params(p, compressor)
    communicator_cls = lookup(COMMUNICATORS, "communicator", p["communicator"])
    return communicator_cls(compressor, memory, p["world_size"], transport=p["transport"],
                            auto_off=AutoOff.from_params(p))
