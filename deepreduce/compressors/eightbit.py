from .._native import f32, lib
from ._framed import FramedCompressor, framed


class EightBitCompressor(FramedCompressor):
    """Dettmers' 8-bit approximation (2016): values scaled by max|g| and coded as a sign
    and one of 128 fixed magnitudes, one byte per entry plus the scale."""

    decoder = "dr_eightbit_decode"

    def encode(self, flat, name):
        return framed(lib.dr_eightbit_size(flat.size),
                      lambda buf, cap, w: lib.dr_eightbit_encode(f32(flat), flat.size, lib.DR_DTYPE_FLOAT32, buf, cap, w),
                      f"8bit of {name!r}")
