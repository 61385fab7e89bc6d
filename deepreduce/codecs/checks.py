"""Argument checks at the codec layer's entry points: the C codecs read raw memory, so
an array of the wrong dtype or a section outside its buffer must be refused here, with
a message that says what was wrong, before any pointer is made."""
import numpy as np

from ..errors import FrameError


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
