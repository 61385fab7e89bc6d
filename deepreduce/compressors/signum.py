import numpy as np

from .. import edge
from .._native import check, f32, lib
from ..state import TensorState
from ._framed import FrameCtx, FramedCompressor, sign_vote
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
    refuses_nonfinite = True

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
        m, old = self.momentums.write(name, restore, flat.size)
        if old is None:
            np.copyto(m, flat)
        else:  # one sweep from the old buffer into the new: no copy first
            check(lib.dr_signum_momentum_into(f32(m), f32(old), f32(flat), flat.size, self.momentum),
                  f"signum of {name!r}")
        frame = self.encode(m, name)  # the sign frame of the momentum
        if frame is None:  # an Inf or a NaN in the gradient (so in m): the momentum stays
            self.momentums.undo(name)
            frame = self.nonfinite(flat.size)
        return [restore.wrap(frame)], FrameCtx(flat.size, restore)

    def rollback(self, name):
        self.momentums.undo(name)

    def aggregate(self, tensors):
        return sign_vote(tensors)
