import math

from .._native import f32, lib
from ._framed import FramedCompressor
from ..checks import integer, number


class InceptionnCompressor(FramedCompressor):
    """INCEPTIONN (Li et al. 2018): error-bounded re-encoding of each float by exponent
    band: |x| >= 1 kept as float32, smaller bands in 16 or 8 bits, values below the error
    bound 2^-bound_bits dropped. The size depends on the data."""

    frame_kind = "DR_KIND_INCEPTIONN"
    decoder = "dr_inceptionn_decode"
    refuses_nonfinite = True  # the encoder refuses Inf and NaN (DR_E_NUMERIC)

    def __init__(self, bound_bits=None):
        super().__init__(tensors_size_are_same=False)
        self.bound_bits = lib.DR_INCEPTIONN_DEFAULT_BITS if bound_bits is None else \
            integer(bound_bits, "inceptionn_bits", 1, lib.DR_INCEPTIONN_MAX_BITS)

    @classmethod
    def from_params(cls, params):
        if "error_bound" not in params:
            return cls(params.get("inceptionn_bits"))
        if "inceptionn_bits" in params:  # GRACE TensorFlow's key for the same bound
            raise ValueError(f"inceptionn_bits={params['inceptionn_bits']!r} and error_bound="
                             f"{params['error_bound']!r} were both given: they are one setting; pass one")
        return cls(bits_of_error_bound(params["error_bound"]))

    def encode(self, flat, name):
        # Into room for the largest frame, and the encoder reports the size it wrote: no
        # sizing sweep of x. An Inf or a NaN gives None (refuses_nonfinite), and compress
        # then sends the marker.
        return self.framed(name, lib.dr_inceptionn_bound(flat.size),
                           lambda buf, cap, w: lib.dr_inceptionn_encode(f32(flat), flat.size, self.bound_bits,
                                                                        lib.DR_DTYPE_FLOAT32, buf, cap, w),
                           f"inceptionn of {name!r}", nonfinite_none=True)


def bits_of_error_bound(error_bound):
    """GRACE's TensorFlow INCEPTIONN reads its ``error_bound`` e as the exponent band
    127 + int(log10(e / 2)): values below 2^int(log10(e / 2)) are dropped. Its default
    2e-10 is 2^-10, our default bound_bits of 10."""
    e = number(error_bound, "error_bound", 0.0, 0.2)  # above 0.2 no band would be dropped
    bits = -int(math.log10(e / 2)) if e > 0 else lib.DR_INCEPTIONN_MAX_BITS + 1
    if bits > lib.DR_INCEPTIONN_MAX_BITS:  # finer than the smallest band bound_bits can express
        raise ValueError(f"error_bound must be in (2e-{lib.DR_INCEPTIONN_MAX_BITS + 1}, 0.2] (GRACE's default: "
                         f"2e-10), got {error_bound!r}")
    return bits


class INCEPTIONNCompressor(InceptionnCompressor):
    """GRACE's TensorFlow name and constructor: ``INCEPTIONNCompressor(error_bound)``."""

    def __init__(self, error_bound=2e-10):
        super().__init__(bits_of_error_bound(error_bound))
