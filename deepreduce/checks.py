"""Argument checks at the Python entry points. Constructor parameters are checked when
a compressor is built (a clear TypeError or ValueError naming the parameter, never a bare
comparison error, a silent truncation or a cffi OverflowError later); the C codecs read
raw memory, so an array of the wrong dtype or a section outside its buffer is refused
before any pointer is made."""
import math
import numbers
import os
from pathlib import Path

import numpy as np

from . import edge
from .errors import FrameError, ParameterTypeError


def array_of(array, dtype, what):
    """``array`` as a 1-D C-contiguous NumPy array of exactly ``dtype`` (never a
    reinterpretation of other bits: float32 indices are not their bit patterns)."""
    dtype = np.dtype(dtype)
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{what}: expected a NumPy array of {dtype}, got {type(array).__name__}")
    if array.dtype != dtype:
        raise TypeError(f"{what}: expected dtype {dtype}, got {array.dtype}; "
                        f"convert with numpy.asarray(x, dtype=numpy.{dtype})")
    if array.ndim != 1:
        raise ValueError(f"{what}: expected a 1-D array, got shape {array.shape}")
    return np.ascontiguousarray(array)


def section(buf, off, length, what):
    """Refuse a section [off, off + length) that does not lie inside the uint8 buffer."""
    if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8:
        raise TypeError(f"{what}: expected the frame as a uint8 NumPy array, got "
                        f"{getattr(buf, 'dtype', type(buf).__name__)}")
    if not (isinstance(off, (int, np.integer)) and isinstance(length, (int, np.integer))):
        raise TypeError(f"{what}: offset and length must be integers, got {off!r} and {length!r}")
    if off < 0 or length < 0 or off + length > buf.nbytes:
        raise FrameError(f"{what}: section [{off}, {off + length}) lies outside the {buf.nbytes}-byte frame")


def _real(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"{what} must be a number, got {value!r} ({type(value).__name__})")
    try:
        return float(value)
    except OverflowError:  # an int past float's range (10**400)
        raise ValueError(f"{what} must be a finite number, got one too large for a float") from None


def fraction(value, what):
    """A ratio in (0, 1], such as compress_ratio."""
    return number(value, what, 0, 1, low_open=True)


def number(value, what, low, high=math.inf, *, low_open=False, high_open=False):
    """A finite number in [low, high]; ``low_open`` / ``high_open`` leave that end out, so
    ``number(lr, "lr", 0.0, low_open=True)`` is a finite lr > 0. NaN and the infinities
    are refused whatever the bounds."""
    x = _real(value, what)
    above = low < x if low_open else low <= x
    below = x < high if high_open else x <= high
    if not (above and below and math.isfinite(x)):
        raise ValueError(f"{what} must be {_span(low, high, low_open, high_open)}, got {value!r}")
    return x


def _span(low, high, low_open, high_open):
    """The allowed values, as the error message says them: "a finite number > 0.0",
    "in (0, 1]"."""
    if high == math.inf:
        return f"a finite number {'>' if low_open else '>='} {low}"
    return f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"


def integer(value, what, low, high):
    """An integer in [low, high]; an integral float (128.0) is accepted, 1.5 is not. An
    integer is taken as it is, not through a float (which would round a seed past 2**53)."""
    x = _real(value, what)
    if not x.is_integer():
        raise ValueError(f"{what} must be an integer, got {value!r}")
    exact = int(value) if isinstance(value, numbers.Integral) else int(x)
    if not low <= exact <= high:
        raise ValueError(f"{what} must be an integer in [{low}, {high}], got {value!r}")
    return exact


def name(value, what, valid):
    """``value`` as the key of a table of names (a compressor, a codec, a mode): a list or
    a set there would otherwise fail in the lookup as a bare "unhashable type" that names
    no parameter. ``valid``: the names the table takes, for the message."""
    try:
        hash(value)
    except TypeError:
        raise ParameterTypeError(f"{what} must be a name (a string), got {value!r} ({type(value).__name__}); "
                                 f"valid names: {', '.join(valid)}") from None
    return value


def runs_by_label(runs, one_run=frozenset()):
    """``runs`` as {label: run}: a dict of labelled runs, or one run (a dict none of whose
    values is a dict, or whose keys are exactly ``one_run``, such as a {'c2s', 's2c'}
    pair), labelled 'compressed'. A dict that mixes the two is refused, naming the first
    label that is not a dict: {"topk": {...}, "typo": 3} ran whole as one params dict."""
    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs must be a dict: {label: params dict}, or one params dict")
    dicts = sum(isinstance(run, dict) for run in runs.values())
    if one_run and set(runs) == set(one_run):
        return {"compressed": runs}
    if not dicts:
        from .params import KEYS  # (params imports this module)
        if not any(key in KEYS for key in runs):
            # {"a": "topk"} ran as one params dict of no key deepreduce reads: a dense run.
            label, run = next(iter(runs.items()))
            raise TypeError(f"runs[{label!r}] is {run!r}, not a params dict, and runs is no params dict either "
                            "(none of its keys is a params key such as 'compressor'): runs is {label: params "
                            "dict}, or one params dict")
        return {"compressed": runs}
    if dicts < len(runs):
        odd = next(label for label, run in runs.items() if not isinstance(run, dict))
        raise TypeError(f"runs[{odd!r}] is {runs[odd]!r}, not a params dict: runs is {{label: params dict}}, "
                        "or one params dict")
    return runs


def flag(value, what):
    """A yes/no parameter: True or False (NumPy's bool, and the integers 0 and 1, as a
    config file may write them), never a string, whose truth would be its length: 'no'
    and 'false' would both switch the option on."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    raise ParameterTypeError(f"{what} must be True or False, got {value!r} ({type(value).__name__})")


def output_folder(path, what):
    """The folder ``path``, made now (with its parents) and checked writable, so that a run
    does not end, after all its work, on a folder it cannot write its results to. A
    ValueError naming ``what`` (the setting, as its caller spells it) otherwise."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = "a file is in the way" if isinstance(e, (FileExistsError, NotADirectoryError)) else e.strerror or e
        raise ValueError(f"{what}={str(path)!r}: cannot make that folder ({why}); "
                         "give a folder that can be written") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{what}={str(path)!r}: that folder cannot be written; give one that can")
    return folder


def dense_payload(payload, numel, what):
    """A payload that carries the tensor's values as they are (none, powersgd's vectors)
    as a NumPy array: ``numel`` floating-point values, else FrameError."""
    array = edge.as_numpy(payload)
    if array.size != numel or array.dtype.kind != "f":
        raise FrameError(f"{what}: {array.size} values of dtype {array.dtype}, expected {numel} floating-point values; "
                         "a payload of another tensor or compressor")
    return array
