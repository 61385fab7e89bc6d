from ._framed import FramedCompressor


class NaturalCompressor(FramedCompressor):
    """Natural compression (Horváth et al. 2019): each value rounded stochastically to a
    signed power of two, one byte per entry; unbiased."""

    frame_kind = "DR_KIND_NATURAL"
    encoder, size, decoder = "dr_natural_encode", "dr_natural_size", "dr_natural_decode"
    label = "natural"
    refuses_nonfinite = True
    stochastic = True


class NaturalCompressor_CUDA(NaturalCompressor):
    """GRACE's ``natural_cuda``: the same method, which GRACE ran through a CUDA extension. Here
    the C core runs it for CPU and CUDA tensors alike (CUDA ones staged through pinned
    memory), with the same frames, so ranks may mix the two names."""
