"""``grace_dl.dist``: the base classes, and aliases for GRACE's module paths.

``grace_dl.dist.compressor.<name>``, ``grace_dl.dist.memory.<name>`` and
``grace_dl.dist.communicator.<name>`` are resolved by a meta-path finder to deepreduce's
modules, so every method deepreduce implements is importable under GRACE's path without a
file per alias.
"""
import importlib
import importlib.abc
import importlib.util
import sys

from deepreduce.base import Communicator, Compressor, Memory

__all__ = ["Communicator", "Compressor", "Memory"]

_PACKAGES = {
    "grace_dl.dist.compressor": "deepreduce.compressors",
    "grace_dl.dist.memory": "deepreduce.memories",
    "grace_dl.dist.communicator": "deepreduce.communicators",
}
# GRACE module names that differ from deepreduce's.
_RENAMES = {
    "grace_dl.dist.communicator.all_to_all": "deepreduce.communicators.alltoall",
    "grace_dl.dist.compressor.deepreduce": "deepreduce.wrappers",
}


def _target(fullname):
    if fullname in _RENAMES:
        return _RENAMES[fullname]
    if fullname in _PACKAGES:
        return _PACKAGES[fullname]
    parent, _, leaf = fullname.rpartition(".")
    if parent in _PACKAGES:
        return f"{_PACKAGES[parent]}.{leaf}"
    return None


class _AliasLoader(importlib.abc.Loader):
    """Makes the alias a module of its own whose names are the target module's objects
    (the very same classes, so isinstance and pickling agree)."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        real = importlib.import_module(self.target)
        public = getattr(real, "__all__", None) or [k for k in vars(real) if not k.startswith("_")]
        for key in public:
            setattr(module, key, getattr(real, key))
        if hasattr(real, "__path__"):  # a package: let submodules resolve through us too
            module.__path__ = []
        module.__doc__ = f"Alias of {self.target} (GRACE import path)."


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        real = _target(fullname)
        if real is None or importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real),
                                               is_package=fullname in _PACKAGES)


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())
