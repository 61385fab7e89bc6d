"""deepreduce: compressed gradient communication for distributed deep learning.

GRACE's API (``grace_from_params``, Compressor / Memory / Communicator) and DeepReduce's
sparse-tensor codecs on a C99 core. ``import deepreduce`` needs only NumPy and CFFI;
PyTorch (``pip install 'deepreduce[torch]'``) and mpi4py (``'deepreduce[mpi]'``) are
optional engines.
"""
import importlib

from . import stats
from .base import Communicator, Compressor, Memory
from .errors import CommunicationError, DeepReduceError, FrameError, ParameterTypeError, UnknownNameError
from .params import DEFAULTS, grace_from_params
from .wrappers import DeepReduce, IndexCompressor, ValueCompressor, deepreduce_from_params

__version__ = "0.1.0"

__all__ = [
    "grace_from_params", "deepreduce_from_params", "ValueCompressor", "IndexCompressor", "DeepReduce", "DEFAULTS", "Compressor", "Memory", "Communicator", "stats",
    "DeepReduceError", "FrameError", "CommunicationError", "UnknownNameError", "ParameterTypeError", "__version__",
]

# Subpackages that need PyTorch (or TensorFlow), loaded when first named: ``import
# deepreduce`` stays NumPy-only, and ``deepreduce.train.run`` works after it as api.md shows.
_ON_FIRST_USE = ("train", "torch", "fl", "tensorflow")


def __getattr__(name):
    if name in _ON_FIRST_USE:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
