"""The thin edge to the C core: Python passes buffers, C does the work.

``ffi`` and ``lib`` come from the CFFI extension ``deepreduce._core`` that the package
build compiles from ``src/c/include/deepreduce.h``. Helpers here turn NumPy arrays into
C pointers without copying and C status codes into Python exceptions.
"""
import numpy as np

from . import edge
from ._core import ffi, lib
from .errors import DeepReduceError, FrameError

_FRAME_STATUSES = frozenset({
    lib.DR_E_FRAME_SHORT, lib.DR_E_FRAME_MAGIC, lib.DR_E_FRAME_VERSION,
    lib.DR_E_FRAME_CHECKSUM, lib.DR_E_FRAME_FIELD, lib.DR_E_FRAME_CODEC, lib.DR_E_CORRUPT,
})


def status_message(status):
    return ffi.string(lib.dr_status_message(status)).decode()


def check(status, what):
    """Raise if a C call failed. ``what`` names the operation and the tensor."""
    if status != lib.DR_OK:
        cls = FrameError if status in _FRAME_STATUSES else DeepReduceError
        raise cls(f"{what}: {status_message(status)}")


def check_frame(status, what):
    """Raise FrameError if a C call on a received payload failed: whatever the status,
    the payload is to blame (its bytes chose every argument the call was given)."""
    if status != lib.DR_OK:
        raise FrameError(f"{what}: {status_message(status)}")


def _pointer_to(ctype, dtype):
    """The function that makes a ``ctype`` pointer into a C-contiguous array of ``dtype``
    (no copy). An array of another dtype is refused rather than reinterpreted: its bits
    would be read as the wrong type."""
    dtype = np.dtype(dtype)
    from_buffer = ffi.from_buffer

    def pointer(array):
        # The common case in two identity tests: a NumPy array of exactly that dtype.
        if type(array) is np.ndarray and array.dtype is dtype:
            return from_buffer(ctype, array)
        if isinstance(array, np.ndarray) and array.dtype != dtype:
            raise TypeError(f"expected a {dtype} array for a {ctype[:-2]} pointer, got {array.dtype}")
        return from_buffer(ctype, array)

    return pointer


_F32 = np.dtype(np.float32)
f32 = _pointer_to("float[]", _F32)  # float *
u32 = _pointer_to("uint32_t[]", np.uint32)
u16 = _pointer_to("uint16_t[]", np.uint16)
u8 = _pointer_to("uint8_t[]", np.uint8)
# The pointer maker and the C pointer type of each dtype a pool holds (``lasting_pointer``).
_POINTERS = {_F32: (f32, ffi.typeof("float *")), np.dtype(np.uint32): (u32, ffi.typeof("uint32_t *")),
             np.dtype(np.uint16): (u16, ffi.typeof("uint16_t *")), np.dtype(np.uint8): (u8, ffi.typeof("uint8_t *"))}


def pointer_maker(dtype):
    """``f32``, ``u32``, ``u16`` or ``u8``: the pointer maker of arrays of ``dtype``."""
    return _POINTERS[np.dtype(dtype)][0]


def lasting_pointer(array):
    """A C pointer to ``array``'s memory (of its dtype, as ``f32``/``u32``/``u16``/``u8``
    make) that holds no reference to the array, for a pool that keeps the array and its
    pointer side by side: the pool's reference counts still say when nothing else holds
    the array, and a step reuses the pointer instead of making one (about a fifth of a
    microsecond each). Valid while the pool keeps the array."""
    make, pointer_type = _POINTERS[array.dtype]
    return ffi.cast(pointer_type, make(array))  # the cast outlives make's reference


_FLOAT_POINTER = ffi.typeof("float *")


def working_pointer(working):
    """``(pointer, numel)``: a ``float *`` to a step's working tensor (``edge.to_working``:
    CPU float32 and C-contiguous, a torch tensor or a NumPy array of any shape), without a
    crossing to NumPy; the caller keeps ``working`` alive while C reads it."""
    if type(working) is np.ndarray:
        return f32(working), working.size
    return ffi.cast(_FLOAT_POINTER, working.data_ptr()), working.numel()


_U8 = np.dtype(np.uint8)


def as_frame_bytes(payload, what):
    """A received payload as a contiguous uint8 array, or a FrameError saying why not.
    ``what`` names the payload in that error: a string, or a function that makes it (so a
    step makes no message it does not raise)."""
    if type(payload) is np.ndarray and payload.dtype is _U8 and payload.ndim == 1 and payload.flags.c_contiguous:
        return payload  # the common case, kept short
    array = edge.as_numpy(payload)
    if callable(what):
        what = what()
    if array.dtype != np.uint8:
        raise FrameError(f"{what}: expected a framed uint8 payload, got dtype {array.dtype}")
    return array if array.ndim == 1 and array.flags.c_contiguous else np.ascontiguousarray(array.reshape(-1))


def zero(flat):
    """Set a flat float32 array to +0.0 in place (the C library's memset: on 100 MB about
    twice as fast as NumPy's fill) and return it."""
    check(lib.dr_zero(f32(flat), flat.size), "zero")
    return flat


def half_quotient(half, divisor):
    """``half / divisor`` for a float16 array: each quotient computed in float32 and rounded
    once to float16 (the C conversions, round to nearest even), the bits NumPy's own
    float16 division gives for any divisor float16 holds exactly (every world size up to
    2048); NumPy converts one element at a time in software, 15 ms for a million here,
    where this takes about one. A divisor float16 cannot hold (3001) is divided by as it
    is, where NumPy would round it first."""
    flat = np.ascontiguousarray(half).reshape(-1)
    wide = np.empty(flat.size, dtype=np.float32)
    check(lib.dr_f16_to_f32(u16(flat.view(np.uint16)), f32(wide), flat.size), "float16 average")
    np.divide(wide, np.float32(divisor), out=wide)
    out = np.empty(flat.size, dtype=np.float16)
    check(lib.dr_f32_to_f16(f32(wide), u16(out.view(np.uint16)), wide.size), "float16 average")
    return out.reshape(half.shape)


def all_finite(flat):
    """Whether a float32 array holds no NaN and no infinity (one streaming pass in C)."""
    return lib.dr_all_finite(f32(flat), flat.size) == 1


def result_finite(result, what):
    """``all_finite`` of a step's result of either kind. A C-contiguous float32 array is
    read in place, a CPU float32 contiguous torch tensor through its data pointer
    (``result`` holds it alive for the call), without building a flat view first;
    anything else crosses the edge."""
    if type(result) is np.ndarray:
        if result.dtype is _F32 and result.flags.c_contiguous:  # any shape: C reads it flat
            return lib.dr_all_finite(f32(result), result.size) == 1
    elif edge.is_torch(result) and result.dtype is edge.torch_float32() and result.is_cpu \
            and result.is_contiguous():
        return lib.dr_all_finite(ffi.cast("float *", result.data_ptr()), result.numel()) == 1
    return all_finite(edge.to_core(result, what=what)[0])


def nonfinite_frame(kind, numel):
    """The marker frame a compressor sends instead of encoding a tensor that holds a NaN
    or an infinity: it says so and carries nothing else (DR_FRAME_FLAG_NONFINITE)."""
    frame = np.empty(lib.DR_FRAME_NONFINITE_SIZE, dtype=np.uint8)
    written = ffi.new("size_t *")
    check(lib.dr_frame_nonfinite(kind, numel, u8(frame), frame.nbytes, written), "non-finite marker frame")
    return frame


def is_nonfinite_frame(buf, kind, numel, what):
    """Whether the received frame ``buf`` is a valid non-finite marker of ``kind`` for
    ``numel`` elements. A forged or mismatched marker raises FrameError."""
    marker = ffi.new("int *")
    check_frame(lib.dr_frame_is_nonfinite(u8(buf), buf.nbytes, kind, numel, marker), what)
    return marker[0] == 1


def decoded_marker(buf, kind, numel, what):
    """For a decoder: NaN in all numel entries when ``buf`` is the non-finite marker of
    ``kind``, None when it is any other frame (the codec's own decoder then judges it)."""
    # Most frames are not markers: their flags byte says so without a C call (the
    # decoder judges them). A frame whose flag is set gets the full check.
    if buf.size < lib.DR_FRAME_NONFINITE_SIZE or not buf[10] & lib.DR_FRAME_FLAG_NONFINITE:
        return None
    return edge.nan_filled(numel) if is_nonfinite_frame(buf, kind, numel, what) else None


def parse_frame(buf, what):
    """Validate a frame (magic, version, sizes, CRC32) and return its header fields."""
    frame = ffi.new("dr_frame *")
    check(lib.dr_frame_parse(u8(buf), buf.nbytes, frame), what)
    return frame


def name_key(name, step):
    """The counter-RNG key every rank derives from a tensor name and a step number."""
    data = str(name).encode("utf-8")
    return lib.dr_rng_key(data, len(data), step)


def simd_level():
    """The SIMD path the kernels take now: 'scalar', 'avx2' or 'avx512'."""
    return ffi.string(lib.dr_simd_name(lib.dr_simd_active())).decode()


def workspace(nbytes):
    """A scratch buffer for a C kernel's ``void *work`` (uint8 array, pointer)."""
    array = np.empty(max(int(nbytes), 1), dtype=np.uint8)
    return array, ffi.from_buffer(array)
