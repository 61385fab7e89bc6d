"""Name -> class for every compressor, memory and communicator of SPEC §3/§5.

Classes are imported lazily so ``import deepreduce`` stays light. A name listed with
``None`` is part of the contract but not built yet: asking for it raises
NotImplementedError; a name not listed at all raises UnknownNameError, which is both a
NotImplementedError (what GRACE's helper raised) and a ValueError, with the valid names.
"""
import importlib

from .checks import name as checked_name
from .errors import UnknownNameError

COMPRESSORS = {
    "none": "deepreduce.compressors.none:NoneCompressor",
    "fp16": "deepreduce.compressors.fp16:FP16Compressor",
    "topk": "deepreduce.compressors.topk:TopKCompressor",
    "randomk": "deepreduce.compressors.randomk:RandomKCompressor",
    "threshold": "deepreduce.compressors.threshold:ThresholdCompressor",
    "qsgd": "deepreduce.compressors.qsgd:QSGDCompressor",
    "qsgd_cuda": "deepreduce.compressors.qsgd:QSGDCompressor_CUDA",
    "terngrad": "deepreduce.compressors.terngrad:TernGradCompressor",
    "onebit": "deepreduce.compressors.onebit:OneBitCompressor",
    "signsgd": "deepreduce.compressors.signsgd:SignSGDCompressor",
    "signum": "deepreduce.compressors.signum:SignumCompressor",
    "efsignsgd": "deepreduce.compressors.efsignsgd:EFSignSGDCompressor",
    "natural": "deepreduce.compressors.natural:NaturalCompressor",
    "natural_cuda": "deepreduce.compressors.natural:NaturalCompressor_CUDA",
    "dgc": "deepreduce.compressors.dgc:DgcCompressor",
    "powersgd": "deepreduce.compressors.powersgd:PowerSGDCompressor",
    "adaq": "deepreduce.compressors.adaq:AdaqCompressor",
    "inceptionn": "deepreduce.compressors.inceptionn:InceptionnCompressor",
    "sketch": "deepreduce.compressors.sketch:SketchCompressor",
    "8bit": "deepreduce.compressors.eightbit:EightBitCompressor",
    "3lc": "deepreduce.compressors.threelc:ThreeLCCompressor",
    "lgc": "deepreduce.compressors.lgc:LGCCompressor",
}
COMPRESSOR_ALIASES = {"u8bit": "8bit"}

MEMORIES = {
    "none": "deepreduce.memories.none:NoneMemory",
    "residual": "deepreduce.memories.residual:ResidualMemory",
    "dgc": "deepreduce.memories.dgc:DgcMemory",
    "efsignsgd": "deepreduce.memories.efsignsgd:EFSignSGDMemory",
    "powersgd": "deepreduce.memories.powersgd:PowerSGDMemory",
}

COMMUNICATORS = {
    "allreduce": "deepreduce.communicators.allreduce:Allreduce",
    "allgather": "deepreduce.communicators.allgather:Allgather",
    "broadcast": "deepreduce.communicators.broadcast:Broadcast",
    "alltoall": "deepreduce.communicators.alltoall:AllToAll",
    "spardl": "deepreduce.communicators.spardl:SparDL",
}


def valid_names(table, aliases=None):
    """The names ``table`` takes, its aliases included, sorted (for error messages)."""
    return sorted(set(table) | set(aliases or {}))


def lookup(table, role, name, aliases=None):
    """The class registered as ``name`` in ``table`` (role: 'compressor', ...)."""
    valid = valid_names(table, aliases)
    key = (aliases or {}).get(checked_name(name, f"params[{role!r}]", valid), name)
    if key not in table:
        raise UnknownNameError(f"unknown {role} {name!r}; valid names: {', '.join(valid)}")
    target = table[key]
    if target is None:
        raise NotImplementedError(f"{role} {name!r} is part of deepreduce's contract but not built yet")
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)
