from ._framed import FramedCompressor


class TernGradCompressor(FramedCompressor):
    """TernGrad (Wen et al. 2017): clip to ±2.5σ, then each entry becomes s·{-1, 0, 1}
    with P(nonzero) = |g|/s, s = max|g|: unbiased within the clip, 2 bits per entry."""

    frame_kind = "DR_KIND_TERNGRAD"
    encoder, size, decoder = "dr_terngrad_encode", "dr_terngrad_size", "dr_terngrad_decode"
    label = "terngrad"
    refuses_nonfinite = True
    stochastic = True
