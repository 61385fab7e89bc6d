from .._native import f32, lib
from ._framed import FramedCompressor, framed, sign_vote


class SignSGDCompressor(FramedCompressor):
    """signSGD with majority vote (Bernstein et al. 2018): one bit per entry on the wire
    (GRACE sent a byte); the aggregate is the sign of the sum of the ranks' signs."""

    decoder = "dr_signsgd_decode"

    def __init__(self):
        super().__init__(average=False)

    def encode(self, flat, name):
        return framed(lib.dr_signsgd_size(flat.size),
                      lambda buf, cap, w: lib.dr_signsgd_encode(f32(flat), flat.size, lib.DR_DTYPE_FLOAT32, buf, cap, w),
                      f"signsgd of {name!r}")

    def aggregate(self, tensors):
        return sign_vote(tensors)
