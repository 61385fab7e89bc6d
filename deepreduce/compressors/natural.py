from .._native import f32, lib
from ._framed import FramedCompressor, framed


class NaturalCompressor(FramedCompressor):
    """Natural compression (Horváth et al. 2019): each value rounded stochastically to a
    signed power of two, one byte per entry; unbiased."""

    decoder = "dr_natural_decode"

    def encode(self, flat, name):
        key = self.keys.next(name)
        return framed(lib.dr_natural_size(flat.size),
                      lambda buf, cap, w: lib.dr_natural_encode(f32(flat), flat.size, key, lib.DR_DTYPE_FLOAT32,
                                                                buf, cap, w),
                      f"natural of {name!r}")
