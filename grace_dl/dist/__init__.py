"""``grace_dl.dist``: the base classes, and aliases for GRACE's module paths.

``grace_dl.dist.compressor.<name>``, ``grace_dl.dist.memory.<name>`` and
``grace_dl.dist.communicator.<name>`` are resolved by a meta-path finder
(``grace_dl._aliases``) to deepreduce's modules, so every method deepreduce implements is
importable under GRACE's path without a file per alias.
"""
from deepreduce.base import Communicator, Compressor, Memory

from .._aliases import register

__all__ = ["Communicator", "Compressor", "Memory"]

register({
    "grace_dl.dist.compressor": "deepreduce.compressors",
    "grace_dl.dist.memory": "deepreduce.memories",
    "grace_dl.dist.communicator": "deepreduce.communicators",
}, {  # GRACE module names that differ from deepreduce's
    "grace_dl.dist.communicator.all_to_all": "deepreduce.communicators.alltoall",
    "grace_dl.dist.compressor.deepreduce": "deepreduce.wrappers",
})
