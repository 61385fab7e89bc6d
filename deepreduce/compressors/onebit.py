from .._native import f32, lib
from ._framed import FramedCompressor, framed


class OneBitCompressor(FramedCompressor):
    """1-bit SGD (Seide et al. 2014): a sign bit per entry plus the mean of the negative
    and of the non-negative entries; each entry decodes to its side's mean. (GRACE's
    uint8 mask was inverted, swapping the two means.)"""

    decoder = "dr_onebit_decode"

    def encode(self, flat, name):
        return framed(lib.dr_onebit_size(flat.size),
                      lambda buf, cap, w: lib.dr_onebit_encode(f32(flat), flat.size, lib.DR_DTYPE_FLOAT32, buf, cap, w),
                      f"onebit of {name!r}")
