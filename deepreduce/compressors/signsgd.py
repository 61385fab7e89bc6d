from ._framed import FramedCompressor, majority_vote


class SignSGDCompressor(FramedCompressor):
    """signSGD with majority vote (Bernstein et al. 2018): one bit per entry on the wire
    (GRACE sent a byte); the aggregate is the sign of the sum of the ranks' signs."""

    frame_kind = "DR_KIND_SIGNSGD"
    encoder, size, decoder = "dr_signsgd_encode", "dr_signsgd_size", "dr_signsgd_decode"
    label = "signsgd"
    refuses_nonfinite = True

    def __init__(self):
        super().__init__(average=False)

    def _finish(self, total):
        return majority_vote(total)
