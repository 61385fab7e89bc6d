from .._native import f32, lib
from ..checks import number
from ._framed import FramedCompressor


class ThreeLCCompressor(FramedCompressor):
    """3LC (Lim et al. 2019): every entry to one of -M, 0, M with M = max|g|·sparsity,
    five such trits per byte, runs of all-zero bytes collapsed. Pair it with the residual
    memory (3LC is defined with error feedback); variable size, so allgather."""

    frame_kind = "DR_KIND_THREELC"
    decoder = "dr_threelc_decode"
    refuses_nonfinite = True  # the encoder refuses Inf and NaN (DR_E_NUMERIC)

    def __init__(self, sparsity=1.0):
        super().__init__(tensors_size_are_same=False)
        self.sparsity = number(sparsity, "threelc_sparsity", 1.0, 2.0, high_open=True)

    @classmethod
    def from_params(cls, params):
        return cls(params.get("threelc_sparsity", 1.0))

    def encode(self, flat, name):
        return self.framed(name, lib.dr_threelc_bound(flat.size),
                           lambda buf, cap, w: lib.dr_threelc_encode(f32(flat), flat.size, self.sparsity,
                                                                     lib.DR_DTYPE_FLOAT32, buf, cap, w),
                           f"3lc of {name!r}", self.refuses_nonfinite)
