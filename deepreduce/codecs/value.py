"""DeepReduce value codecs: how the values of a sparse tensor travel.

A codec turns r float32 values (in the order of the rebuilt index set) into one frame
section and back; the work is C (deepreduce/value.h). Reordering codecs (polyfit, dexp)
return ``perm`` (perm[j] = input position of the j-th value in codec order) and decode
to values in that order. Each codec owns params[2:4] of the frame; a decoder reads its
parameters from the frame, so a frame is self-describing.
"""
import numpy as np

from .._native import check, check_frame, f32, ffi, lib, u8, u32
from ..compressors._framed import StepKeys
from ..errors import FrameError, UnknownNameError
from ..checks import array_of, integer, name as checked_name, section


def _written():
    return ffi.new("size_t *")


class ValueCodec:
    """Shared shape. ``fixed_size``: the section size is a function of r alone.
    ``signs_in_index``: the section holds magnitudes, and the sign of the j-th value in
    codec order travels on the index side (the wrappers put it there)."""

    name = None
    codec_id = None
    reorders = False
    signs_in_index = False
    fixed_size = True
    params = (0, 0)

    def bound(self, r):
        raise NotImplementedError

    def encode(self, values, ptr, cap, name, work):
        """Write the section for ``values`` (float32); return (bytes written, perm or None)."""
        return self._write(array_of(values, np.float32, f"{self.name} values of {name!r}"), ptr, cap, name, work)

    def _write(self, values, ptr, cap, name, work):
        raise NotImplementedError

    def decode(self, buf, off, length, r, params, work):
        """The r values of the section at buf[off:off+length] (possibly a view)."""
        section(buf, off, length, f"{self.name} value section")
        return self._read(buf, off, length, r, params, work)

    def _read(self, buf, off, length, r, params, work):
        raise NotImplementedError

    def _zero_params(self, params):
        if any(params):
            raise FrameError(f"{self.name} value section: codec parameters {tuple(params)} must be zero")

    def _decode_into(self, decoder, buf, off, length, r, work, *args):
        """Run a C decoder that writes r floats into a workspace array."""
        out = work.array("values", r, np.float32)
        check_frame(decoder(u8(buf) + off, length, r, *args, f32(out)), f"{self.name} value section")
        return out


class RawValues(ValueCodec):
    name = "raw"
    codec_id = lib.DR_VALUE_RAW

    def bound(self, r):
        return 4 * r

    def _write(self, values, ptr, cap, name, work):
        ffi.memmove(ptr, f32(values), values.nbytes)
        return values.nbytes, None

    def _read(self, buf, off, length, r, params, work):
        self._zero_params(params)
        if length != 4 * r:
            raise FrameError(f"raw value section: {length} bytes for {r} values, expected {4 * r}")
        return np.frombuffer(buf, dtype=np.float32, count=r, offset=off)


class CastValues(ValueCodec):
    """fp16 / bf16: 2 bytes per value."""

    def __init__(self, name):
        self.name = name
        self.codec_id = getattr(lib, f"DR_VALUE_{name.upper()}")
        self._encode = getattr(lib, f"dr_value_{name}_encode")
        self._decode = getattr(lib, f"dr_value_{name}_decode")

    def __reduce__(self):
        # Pickled by name: the C functions it keeps cannot be pickled (a checkpoint of a
        # DeepReduce wrapper holds its codecs).
        return type(self), (self.name,)

    def bound(self, r):
        return 2 * r

    def _write(self, values, ptr, cap, name, work):
        written = _written()
        check(self._encode(f32(values), values.size, ptr, cap, written), f"{self.name} of {name!r}")
        return written[0], None

    def _read(self, buf, off, length, r, params, work):
        self._zero_params(params)
        return self._decode_into(self._decode, buf, off, length, r, work)


class PolyfitValues(ValueCodec):
    """Piecewise polynomial fit of the values sorted descending, with free knots (the
    section lists its pieces, so it is not fixed-size). ``reference=False``: the
    paper's knots (§5: ceil(sqrt(2M)) per sign side, each at the point farthest from its
    piece's chord) and float32 coefficients; ``reference=True``: DeepReduce's reference
    polyfit_cpu (its find_breaks knots, float64 coefficients).
    params[2] = degree | flags << 8."""

    name = "polyfit"
    codec_id = lib.DR_VALUE_POLYFIT
    reorders = True
    fixed_size = False

    def __init__(self, degree=lib.DR_POLYFIT_DEFAULT_DEGREE, reference=False):
        self.degree = integer(degree, "poly_degree", 0, lib.DR_POLYFIT_MAX_DEGREE)
        self.flags = lib.DR_POLYFIT_KNOTS_REFERENCE if reference else lib.DR_POLYFIT_COEF_F32
        if reference:
            self.name = "polyfit_cpu"
        self.params = (self.degree | self.flags << 8, 0)

    def bound(self, r):
        return lib.dr_value_polyfit_bound(r, self.degree, self.flags)

    def _write(self, values, ptr, cap, name, work):
        perm = work.array("perm", values.size, np.uint32)
        scratch = work.array("polyfit", lib.dr_value_polyfit_workspace_size(values.size), np.uint8)
        written = _written()
        check(lib.dr_value_polyfit_encode(f32(values), values.size, self.degree, self.flags, u32(perm), ptr, cap,
                                          written, ffi.from_buffer(scratch)), f"{self.name} of {name!r}")
        return written[0], perm

    def _read(self, buf, off, length, r, params, work):
        packed, unused = params
        degree, flags = packed & 0xFF, packed >> 8
        known = lib.DR_POLYFIT_COEF_F32 | lib.DR_POLYFIT_KNOTS_REFERENCE
        if unused or degree > lib.DR_POLYFIT_MAX_DEGREE or flags & ~known:
            raise FrameError(f"polyfit value section: bad parameters {tuple(params)}")
        return self._decode_into(lib.dr_value_polyfit_decode, buf, off, length, r, work, degree, flags)


class DexpValues(ValueCodec):
    """Double-exponential fit of the magnitudes sorted ascending: four float64
    coefficients, 32 bytes for any r. The signs travel on the index side, as in
    DeepReduce's reference."""

    name = "dexp"
    codec_id = lib.DR_VALUE_DEXP
    reorders = True
    signs_in_index = True

    def bound(self, r):
        return lib.dr_value_dexp_bound(r)

    def _write(self, values, ptr, cap, name, work):
        perm = work.array("perm", values.size, np.uint32)
        scratch = work.array("dexp", lib.dr_value_dexp_workspace_size(values.size), np.uint8)
        written = _written()
        check(lib.dr_value_dexp_encode(f32(values), values.size, u32(perm), ptr, cap, written,
                                       ffi.from_buffer(scratch)), f"dexp of {name!r}")
        return written[0], perm

    def _read(self, buf, off, length, r, params, work):
        self._zero_params(params)
        return self._decode_into(lib.dr_value_dexp_decode, buf, off, length, r, work)


class DeflateValues(ValueCodec):
    """zlib of the float32 bytes at ``level`` (the decoder needs no parameter)."""

    name = "deflate"
    codec_id = lib.DR_VALUE_DEFLATE
    fixed_size = False

    def __init__(self, level=lib.DR_DEFLATE_DEFAULT_LEVEL):
        self.level = integer(level, "deflate_level", 0, 9)

    def bound(self, r):
        return lib.dr_value_deflate_bound(r)

    def _zlib_work(self, work, r):
        return ffi.from_buffer(work.array("zlib", lib.dr_value_deflate_workspace_size(r, self.level), np.uint8))

    def _write(self, values, ptr, cap, name, work):
        written = _written()
        check(lib.dr_value_deflate_encode(f32(values), values.size, self.level, ptr, cap, written,
                                          self._zlib_work(work, values.size)), f"deflate of {name!r}")
        return written[0], None

    def _read(self, buf, off, length, r, params, work):
        self._zero_params(params)
        out = work.array("values", r, np.float32)
        check_frame(lib.dr_value_deflate_decode(u8(buf) + off, length, r, f32(out), self._zlib_work(work, r)),
                    "deflate value section")
        return out


class QsgdValues(ValueCodec):
    """Bucketed stochastic quantisation: params[2] = s (quantum_num), params[3] =
    bucket size. Rounding noise is keyed by (tensor name, rank, step): reproducible,
    independent across ranks, no global generator."""

    name = "qsgd"
    codec_id = lib.DR_VALUE_QSGD

    def __init__(self, quantum_num=lib.DR_QSGD_DEFAULT_QUANTUM, bucket_size=lib.DR_QSGD_DEFAULT_BUCKET):
        self.params = (integer(quantum_num, "quantum_num", 1, lib.DR_QSGD_MAX_QUANTUM),
                       integer(bucket_size, "bucket_size", 1, 0xFFFFFFFF))  # uint32 in the frame
        self.keys = StepKeys()

    def bound(self, r):
        return lib.dr_value_qsgd_bound(r, self.params[1], self.params[0])

    def _write(self, values, ptr, cap, name, work):
        s, bucket = self.params
        written = _written()
        check(lib.dr_value_qsgd_encode(f32(values), values.size, bucket, s, self.keys.next(name), ptr, cap, written),
              f"qsgd of {name!r}")
        return written[0], None

    def _read(self, buf, off, length, r, params, work):
        s, bucket = params
        if not (1 <= s <= lib.DR_QSGD_MAX_QUANTUM and bucket >= 1):
            raise FrameError(f"qsgd value section: bad parameters s={s}, bucket={bucket}")
        return self._decode_into(lib.dr_value_qsgd_decode, buf, off, length, r, work, bucket, s)


class SketchValues(ValueCodec):
    """SketchML's quantile sketch of the values (SKCompress's value side): params[2] =
    bins (quantum_num); a bin index per value and each bin's float32 mean. The quantile
    sample (drawn only past DR_SKETCH_SAMPLE values) is keyed by (tensor name, rank, step)."""

    name = "sketch"
    codec_id = lib.DR_VALUE_SKETCH
    max_bins = lib.DR_SKETCH_MAX_BINS
    bins_param = "quantum_num (sketch bins)"
    _bound = staticmethod(lib.dr_value_sketch_bound)
    _workspace = staticmethod(lib.dr_sketch_workspace_size)
    _encoder = staticmethod(lib.dr_value_sketch_encode)
    _decoder = staticmethod(lib.dr_value_sketch_decode)

    def __init__(self, bins=lib.DR_QSGD_DEFAULT_QUANTUM):
        self.params = (integer(bins, self.bins_param, 1, self.max_bins), 0)
        self.keys = StepKeys()

    def bound(self, r):
        return self._bound(r, self.params[0])

    def _write(self, values, ptr, cap, name, work):
        bins = self.params[0]
        scratch = work.array(self.name, self._workspace(values.size, bins), np.uint8)
        written = _written()
        check(self._encoder(f32(values), values.size, bins, self.keys.next(name), ptr, cap, written,
                            ffi.from_buffer(scratch)), f"{self.name} of {name!r}")
        return written[0], None

    def _read(self, buf, off, length, r, params, work):
        bins, unused = params
        if unused or not 1 <= bins <= self.max_bins:
            raise FrameError(f"{self.name} value section: bad parameters {tuple(params)}")
        return self._decode_into(self._decoder, buf, off, length, r, work, bins)


class SkcompressValues(SketchValues):
    """SKCompress's values: the quantile sketch with ``num_quantiles`` bins (params[2]),
    each bin index Huffman-coded (the code table travels in the section) and the bin
    means as int16 fractions of the largest (deepreduce/value.h)."""

    name = "skcompress"
    codec_id = lib.DR_VALUE_SKCOMPRESS
    fixed_size = False  # the Huffman codes follow the bins' counts
    max_bins = lib.DR_SKCOMPRESS_MAX_BINS
    bins_param = "num_quantiles"
    _bound = staticmethod(lib.dr_value_skcompress_bound)
    _workspace = staticmethod(lib.dr_value_skcompress_workspace_size)
    _encoder = staticmethod(lib.dr_value_skcompress_encode)
    _decoder = staticmethod(lib.dr_value_skcompress_decode)

    def __init__(self, bins=lib.DR_SKCOMPRESS_DEFAULT_BINS):
        super().__init__(bins)


NAMES = ("polyfit", "polyfit_cpu", "dexp", "deflate", "qsgd", "fp16", "bf16", "sketch", "skcompress", "raw")
_ALIASES = {"gzip": "deflate", "none": "raw"}


def value_codec(name, poly_degree=lib.DR_POLYFIT_DEFAULT_DEGREE, quantum_num=lib.DR_QSGD_DEFAULT_QUANTUM,
                bucket_size=lib.DR_QSGD_DEFAULT_BUCKET, deflate_level=lib.DR_DEFLATE_DEFAULT_LEVEL,
                num_quantiles=lib.DR_SKCOMPRESS_DEFAULT_BINS):
    """The value codec called ``name``, configured by the keyword arguments it reads."""
    key = _ALIASES.get(checked_name(name, "value codec", NAMES + tuple(_ALIASES)), name)
    if key in ("polyfit", "polyfit_cpu"):  # polyfit_cpu: the reference's CPU codec
        return PolyfitValues(poly_degree, reference=key == "polyfit_cpu")
    if key == "dexp":
        return DexpValues()
    if key == "deflate":
        return DeflateValues(deflate_level)
    if key == "qsgd":
        return QsgdValues(quantum_num, bucket_size)
    if key in ("fp16", "bf16"):
        return CastValues(key)
    if key == "sketch":
        return SketchValues(quantum_num)
    if key == "skcompress":
        return SkcompressValues(num_quantiles)
    if key == "raw":
        return RawValues()
    raise UnknownNameError(f"unknown value codec {name!r}; valid names: {', '.join(NAMES + tuple(_ALIASES))}")
