import numpy as np

from ._framed import FramedCompressor
from ..checks import number


class EFSignSGDCompressor(FramedCompressor):
    """EF-SignSGD (Karimireddy et al. 2019): mean|x| times the sign bits of x, where x
    already carries the learning rate and the error feedback (pair with the efsignsgd
    memory). The aggregate is the sum divided by lr, not averaged."""

    frame_kind = "DR_KIND_EFSIGNSGD"
    encoder, size, decoder = "dr_efsignsgd_encode", "dr_efsignsgd_size", "dr_efsignsgd_decode"
    label = "efsignsgd"
    refuses_nonfinite = True

    def __init__(self, lr=0.1):
        super().__init__(average=False)
        self.learning_rate = number(lr, "lr", 0.0, low_open=True)  # the aggregate is divided by it

    @classmethod
    def from_params(cls, params):
        return cls(params["lr"])

    def _finish(self, total):
        # A sum near float32's largest over a learning rate below 1 overflows to Inf, as in
        # torch (which says nothing); the step then finds the result non-finite and skips
        # it. NumPy's RuntimeWarning about it would be noise beside that.
        with np.errstate(over="ignore"):
            return np.divide(total, np.float32(self.learning_rate), out=total)
