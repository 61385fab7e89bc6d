from .._native import f32, lib
from ._framed import FramedCompressor, framed


class TernGradCompressor(FramedCompressor):
    """TernGrad (Wen et al. 2017): clip to ±2.5σ, then each entry becomes s·{-1, 0, 1}
    with P(nonzero) = |g|/s, s = max|g|: unbiased within the clip, 2 bits per entry."""

    decoder = "dr_terngrad_decode"

    def encode(self, flat, name):
        key = self.keys.next(name)
        return framed(lib.dr_terngrad_size(flat.size),
                      lambda buf, cap, w: lib.dr_terngrad_encode(f32(flat), flat.size, key, lib.DR_DTYPE_FLOAT32,
                                                                 buf, cap, w),
                      f"terngrad of {name!r}")
