"""``grace_from_params``: GRACE's one-call factory, with its keys and defaults."""
import difflib
import warnings

from .autooff import AutoOff
from .errors import ParameterTypeError
from .checks import name
from .registry import COMMUNICATORS, COMPRESSOR_ALIASES, COMPRESSORS, MEMORIES, lookup, valid_names

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
    """params over the defaults, checked. Unknown keys are kept (codec wrappers read them,
    and GRACE scripts keep settings of their own there); one that looks like a misspelt key
    is warned of, since it would silently leave that key at its default."""
    if not isinstance(params, dict):
        raise ParameterTypeError(f"params must be a dict, got {type(params).__name__}")
    warn_misspelt_keys(params)
    merged = dict(DEFAULTS)
    compressor = name(params.get("compressor"), "params['compressor']", valid_names(COMPRESSORS, COMPRESSOR_ALIASES))
    merged.update(COMPRESSOR_DEFAULTS.get(compressor, {}))
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
    if hasattr(communicator_cls, "from_params"):  # a communicator with keys of its own (spardl)
        return communicator_cls.from_params(compressor, memory, p)
    return communicator_cls(compressor, memory, p["world_size"], transport=p["transport"],
                            auto_off=AutoOff.from_params(p))


# Every params key deepreduce reads: (default as documented, who reads it, what it does).
# The documentation's params page is generated from this table and DEFAULTS, and a test
# checks that every key the code reads is here, so the two cannot drift apart.
KEYS = {
    "compressor": (None, "grace_from_params", "the compressor's name (see the registry)"),
    "memory": (None, "grace_from_params", "the memory's name: none, residual, dgc, efsignsgd, powersgd"),
    "communicator": (None, "grace_from_params", "allreduce, allgather, broadcast, alltoall, spardl"),
    "compress_ratio": (None, "topk, randomk, dgc, adaq, spardl, lgc (1e-3 for lgc)", "kept fraction: k = max(1, int(n·ratio))"),
    "quantum_num": (None, "qsgd, sketch, DeepReduce value codecs qsgd and sketch", "quantization levels s (sketch: its bins)"),
    "bucket_size": (None, "qsgd (128); DeepReduce value codec qsgd (512 when absent)", "values per norm bucket"),
    "threshold": (None, "threshold", "send every |g| >= threshold"),
    "momentum": (None, "signum, dgc memory", "β of signum's momentum; DGC's momentum correction"),
    "lr": (None, "efsignsgd compressor and memory", "the learning rate folded into EF-signSGD"),
    "compress_rank": (None, "powersgd compressor and memory", "rank r of P·Qᵀ"),
    "gradient_clipping": (None, "dgc memory", "clip by the global norm before accumulating"),
    "kernel": (None, "topk", "accepted for GRACE scripts and ignored: selection is C"),
    "world_size": (None, "communicator, powersgd, dgc memory, spardl, lgc", "None: the transport's size"),
    "transport": (None, "communicator, powersgd, dgc memory, spardl, lgc", "a Transport, 'torch', 'mpi', 'local', None: detect"),
    "auto_off": (None, "communicator", "send a tensor dense when compressing costs more than it saves"),
    "bandwidth": (None, "auto_off", "link bytes/s for auto_off's cost model (None: measured)"),
    "auto_off_warmup": ("2", "auto_off", "steps measured on each path (alternating; one each when a path is 2x cheaper) before deciding"),
    "auto_off_interval": ("100", "auto_off", "steps between re-measurements"),
    "auto_off_min_numel": ("4096", "auto_off", "tensors with fewer elements go dense without measuring"),
    "density": ("compress_ratio", "spardl", "SparDL's name for ρ: sets the topk compressor's compress_ratio"),
    "spardl_teams": ("1", "spardl", "d, the number of teams; must divide the world size"),
    "spardl_index_codec": ("'rice'", "spardl", "index codec of SparDL's hops: rice, ef, varint, raw"),
    "inceptionn_bits": ("10", "inceptionn", "error bound 2^-bits below which values are dropped"),
    "quantiles": ("quantum_num; 64 in grace_dl.tensorflow.helper", "sketch", "GRACE TensorFlow's name for the sketch's bins: give it or quantum_num"),
    "error_bound": ("2e-10", "inceptionn", "GRACE TensorFlow's bound e: values below 2^int(log10(e/2)) dropped; give it or inceptionn_bits"),
    "momentum_factor": ("0.9", "powersgd, TensorFlow flavour", "accepted for GRACE's TensorFlow scripts and ignored (docs/tensorflow.md)"),
    "threelc_sparsity": ("1.0", "3lc", "M = max|g|·sparsity, in [1, 2): higher rounds more entries to 0"),
    "deepreduce": ("None", "deepreduce_from_params", "wrap the compressor: None, 'value', 'index', 'both'"),
    "index": ("'bloom'", "DeepReduce wrappers", "index codec: bloom, rle, huffman, ef, rice, varint, skcompress, raw (the reference's bloom_cpu, rlhff, None too)"),
    "value": ("'polyfit'", "DeepReduce wrappers", "value codec: polyfit, polyfit_cpu, dexp, deflate, qsgd, fp16, bf16, sketch, skcompress, raw (the reference's gzip, None too)"),
    "num_quantiles": ("4", "skcompress value codec", "quantile bins of SKCompress's values (1..256; the reference's SKCompressCPU key)"),
    "fpr": ("0.1·r/d", "bloom index codec", "the Bloom filter's false-positive rate"),
    "policy": ("'leftmost'", "bloom index codec", "leftmost, random (P1), p0, conflict_sets (P2), naive (BF-Naive)"),
    "poly_degree": ("5", "polyfit value codec", "degree of each segment's polynomial"),
    "deflate_level": ("6", "deflate value codec", "zlib level"),
    "sort": ("False", "DeepReduce wrappers", "accepted for DeepReduce scripts; polyfit always sorts"),
    "micro-benchmark": ("False", "DeepReduce wrappers", "print per-tensor codec sizes and times"),
    "min_numel": ("1000", "DeepReduce wrappers", "tensors of at most this many elements skip the codecs (raw top-k)"),
}
# LGC's keys: (default, what it does); deepreduce.compressors.lgc takes its defaults from here.
LGC_KEYS = {
    "lgc_variant": ("ps", "'ps' (parameter server) or 'rar' (ring allreduce)"),
    "lgc_dense_steps": (100, "stage 1 length in steps (dense)"),
    "lgc_train_steps": (200, "stage 2 length in steps (top-k while the autoencoder learns)"),
    "lgc_innovation_ratio": (1e-5, "'ps': each worker's innovation entries, as a fraction of n (at least 1)"),
    "lgc_channels": ((16, 32, 32, 16), "encoder widths; the depth sets the block 2**depth"),
    "lgc_latent_channels": (4, "latent = latent_channels * ceil(k / 2**depth) floats"),
    "lgc_lr": (3e-3, "Adam's learning rate for the autoencoder"),
    "lgc_buffer": (64, "training samples kept (the newest)"),
    "lgc_replay": (1, "older samples replayed per training step"),
    "lgc_train_iters": (1, "Adam steps per stage-2 step (on rank 0)"),
    "lgc_seed": (0, "initial weights and the training generator"),
    "lgc_dense_ends": (True, "the first and last tensor of a step stay dense (the paper)"),
    "lgc_min_numel": (1000, "smaller tensors stay dense (as DeepReduce's min_numel)"),
    "lgc_index": ("rice", "lossless index codec of the index sets: rice, ef, varint"),
}
KEYS.update({key: (repr(default), "lgc", meaning) for key, (default, meaning) in LGC_KEYS.items()})


def warn_misspelt_keys(params):
    """A UserWarning for each key of ``params`` that deepreduce does not read but that is
    one letter or so from one it does ('compress_ration', 'memmory', 'micro_benchmark')."""
    for key in params:
        if isinstance(key, str) and key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.85)
            if close:
                warnings.warn(f"params key {key!r} is not one deepreduce reads: did you mean {close[0]!r}? "
                              f"(as it is, {close[0]!r} keeps its default; unknown keys are otherwise ignored, "
                              "as in GRACE)", UserWarning, stacklevel=4)


def documented_default(key):
    """The default shown for ``key``: GRACE's (DEFAULTS) where it has one, else KEYS's."""
    default = KEYS[key][0]
    return repr(DEFAULTS[key]) if default is None else default
