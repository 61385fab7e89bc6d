from ._framed import FramedCompressor


class OneBitCompressor(FramedCompressor):
    """1-bit SGD (Seide et al. 2014): a sign bit per entry plus the mean of the negative
    and of the non-negative entries; each entry decodes to its side's mean. (GRACE's
    uint8 mask was inverted, swapping the two means.)"""

    frame_kind = "DR_KIND_ONEBIT"
    encoder, size, decoder = "dr_onebit_encode", "dr_onebit_size", "dr_onebit_decode"
    label = "onebit"
    refuses_nonfinite = True
