from ._framed import FramedCompressor


class NaturalCompressor(FramedCompressor):
    """Natural compression (Horváth et al. 2019): each value rounded stochastically to a
    signed power of two, one byte per entry; unbiased."""

    encoder, size, decoder = "dr_natural_encode", "dr_natural_size", "dr_natural_decode"
    label = "natural"
    stochastic = True
