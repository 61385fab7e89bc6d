"""GRACE's import paths, served by deepreduce, so scripts written for GRACE's
torch.distributed flavour (``grace_dl.dist``) run unchanged.

Beside a real GRACE checkout: set ``DEEPREDUCE_GRACE_DL=off`` and ``import grace_dl``
gives the first *other* ``grace_dl`` on ``sys.path`` (e.g. a checkout on PYTHONPATH),
whole, submodules included; deepreduce itself stays importable as ``deepreduce``. This
is needed because an editable install of deepreduce resolves ``grace_dl`` ahead of
``sys.path``, so PYTHONPATH alone cannot put GRACE first.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_OPT_OUT = os.environ.get("DEEPREDUCE_GRACE_DL", "on").strip().lower() in ("off", "0", "false", "no")


class _StepAside(importlib.abc.MetaPathFinder):
    """Resolves ``grace_dl`` and its submodules with Python's own path search, skipping
    deepreduce's copy: the top level from sys.path, submodules from the parent's path."""

    def __init__(self, ours):
        self.ours = ours

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "grace_dl":
            search = [p for p in sys.path if os.path.realpath(os.path.join(p or ".", "grace_dl")) != self.ours]
            return importlib.machinery.PathFinder.find_spec(fullname, search)
        if fullname.startswith("grace_dl."):
            return importlib.machinery.PathFinder.find_spec(fullname, path)
        return None


def _hand_over():
    ours = os.path.realpath(os.path.dirname(__file__))
    finder = _StepAside(ours)
    spec = finder.find_spec("grace_dl")
    if spec is None:
        raise ImportError("DEEPREDUCE_GRACE_DL=off asks for another grace_dl (a GRACE checkout), but none is on "
                          "sys.path: add its folder to PYTHONPATH, or unset DEEPREDUCE_GRACE_DL to use deepreduce's")
    sys.meta_path.insert(0, finder)
    module = importlib.util.module_from_spec(spec)
    sys.modules["grace_dl"] = module
    spec.loader.exec_module(module)


if _OPT_OUT:
    _hand_over()
