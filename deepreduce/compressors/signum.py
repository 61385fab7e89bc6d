import numpy as np

from .. import edge
from .._native import all_finite, check, f32, lib
from ..state import TensorState
from ._framed import FramedCompressor, sign_vote
from ..checks import number


class SignumCompressor(FramedCompressor):
    """Signum (Bernstein et al. 2018): the sign of the momentum m = (1−β)·g + β·m (m = g
    at the first call), one bit per entry, aggregated by majority vote.

    ``momentums[name]`` (GRACE's name) is a copy in the caller's kind, not the caller's
    tensor itself (GRACE kept a reference, which the training loop then overwrote). A
    gradient holding a NaN or an infinity sends the non-finite marker and leaves the
    momentum as it was; so does a step whose vote came out non-finite (``rollback``)."""

    frame_kind = "DR_KIND_SIGNUM"
    encoder, size, decoder = "dr_signum_encode", "dr_signum_size", "dr_signum_decode"
    label = "signum"

    def __init__(self, momentum=0.9):
        super().__init__(average=False)
        self.momentum = number(momentum, "momentum", 0.0, 1.0)
        self.momentums = TensorState()

    @classmethod
    def from_params(cls, params):
        return cls(params["momentum"])

    def compress(self, tensor, name):
        self.momentums.settle(name)
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        if not all_finite(flat):
            return super().compress(tensor, name)  # the marker; the momentum stays
        m, old = self.momentums.write(name, restore, flat.size)
        if old is not None:
            np.copyto(m, old)
        check(lib.dr_signum_momentum(f32(m), f32(flat), flat.size, self.momentum, int(old is None)),
              f"signum of {name!r}")
        return super().compress(restore.working(m), name)  # the sign frame of the momentum

    def rollback(self, name):
        self.momentums.undo(name)

    def aggregate(self, tensors):
        return sign_vote(tensors)
