from .._native import lib
from ._framed import FramedCompressor
from ..checks import integer


class QSGDCompressor(FramedCompressor):
    """QSGD (Alistarh et al. 2017): per bucket of ``bucket_size`` values, the L2 norm and
    levels in [-s, s] (s = quantum_num) by unbiased stochastic rounding; int8 levels when
    s < 128, else int16. A zero bucket decodes to zeros (GRACE's gave NaN)."""

    frame_kind = "DR_KIND_QSGD"
    encoder, size, decoder = "dr_qsgd_encode", "dr_qsgd_size", "dr_qsgd_decode"
    label = "qsgd"
    refuses_nonfinite = True
    params = ("quantum_num", "bucket_size")
    stochastic = True

    def __init__(self, quantum_num=127, bucket_size=128):
        super().__init__()
        self.quantum_num = integer(quantum_num, "quantum_num", 1, lib.DR_QSGD_MAX_S)
        # The frame carries the bucket size as a uint32.
        self.bucket_size = integer(bucket_size, "bucket_size", 1, 0xFFFFFFFF)

    @classmethod
    def from_params(cls, params):
        return cls(params["quantum_num"], params["bucket_size"])


class QSGDCompressor_CUDA(QSGDCompressor):
    """GRACE's ``qsgd_cuda``: the same method, which GRACE ran through a CUDA extension. Here
    the C core runs it for CPU and CUDA tensors alike (CUDA ones staged through pinned
    memory), with the same frames, so ranks may mix the two names."""
