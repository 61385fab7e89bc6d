from .. import edge
from .._native import f32, ffi, lib
from ..state import HoldsTensorStates, StateAttribute, TensorState
from ._framed import FrameCtx, FramedCompressor, majority_vote
from ..checks import number


class SignumCompressor(HoldsTensorStates, FramedCompressor):
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

    # GRACE's dict of tensors: assignable as GRACE's was (state.StateAttribute).
    momentums = StateAttribute()

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
        # One sweep: the new momentum from the old one (m = g at the first call) and the
        # sign frame of it, packed while each block of m is still in cache.
        old_pointer = ffi.NULL if old is None else f32(old)
        frame = self.framed(name, lib.dr_signum_size(flat.size),
                            lambda buf, cap, written: lib.dr_signum_momentum_encode(
                                f32(m), old_pointer, f32(flat), flat.size, self.momentum, lib.DR_DTYPE_FLOAT32,
                                buf, cap, written),
                            f"signum of {name!r}", nonfinite_none=True)
        if frame is None:  # an Inf or a NaN in the gradient (so in m): the momentum stays
            self.momentums.undo(name)
            frame = self.nonfinite(flat.size)
        return [restore.wrap(frame)], FrameCtx(flat.size, restore, name)

    def rollback(self, name):
        self.momentums.undo(name)

    def _finish(self, total):
        return majority_vote(total)
