"""GRACE's module paths served by deepreduce's modules, for every flavour
(``grace_dl.dist``, ``grace_dl.torch``, ``grace_dl.tensorflow``).

``register(packages, renames)`` adds a flavour: ``packages`` maps GRACE's packages
(``grace_dl.tensorflow.compressor``) to ours (``deepreduce.compressors``), so each module
inside resolves to ours of the same name; ``renames`` maps GRACE module names that differ.
A meta-path finder serves them, without a file per alias.
"""
import importlib
import importlib.abc
import importlib.util
import sys

_PACKAGES = {}
_RENAMES = {}


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


def register(packages, renames=None):
    """Serve ``packages`` (GRACE package -> ours) and ``renames`` (GRACE module -> ours)."""
    _PACKAGES.update(packages)
    _RENAMES.update(renames or {})
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
