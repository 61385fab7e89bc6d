from functools import partial

from .. import edge
from .._native import check, f32, lib, working_pointer
from ..base import Compressor, Memory, crossed, is_compressor, keeps_methods
from ..state import HoldsTensorStates, Outputs, StateAttribute, TensorState


# Below this size the copy the adoption saves costs less than its bookkeeping.
ADOPT_MIN_NUMEL = 1 << 16
# The methods fused_encode stands in for.
_STEP_METHODS = ("compensate", "update")


class ResidualMemory(HoldsTensorStates, Memory):
    """Error feedback: e = x − D(C(x)) is kept per tensor and the next gradient becomes
    x = β·e + γ·g. ``residuals[name]`` is in the caller's kind and shape (a torch tensor
    for torch callers, as GRACE's); its buffers are allocated once and reused (for a
    sparsifier's large tensor the compensated tensor itself becomes the residual: three
    buffers per name take turns as compensated tensor, residual and the one kept for a
    rollback).

    A step whose aggregate is non-finite (on any rank) leaves the residual as it was:
    a loss scaler skips that step, so nothing of it may linger in the memory. The rank
    whose own tensor was non-finite writes nothing; the others take their write back
    (``rollback``)."""

    # GRACE's dict of tensors: assignable as GRACE's was (state.StateAttribute).
    residuals = StateAttribute()

    def __init__(self, beta=1.0, gamma=1.0):
        self.residuals = TensorState()
        self.beta = beta
        self.gamma = gamma
        # The compensated tensors, reused per name once nothing refers to them (with
        # 'none' the payload, and so a one-rank result, may be the compensated tensor).
        self.compensated = Outputs()

    def compensate(self, tensor, name):
        self.residuals.settle(name)
        first = name not in self.residuals
        if first and self.gamma == 1:
            return tensor
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        # e = 0 at the first step: x = 0·g + γ·g (GRACE returned g itself, so EF-SignSGD's
        # first update was 1/lr times too large, and its first residual g − D(C(g))).
        beta, residual = (0.0, flat) if first else (self.beta, self._residual(name, flat.size))
        out = self.compensated.take(name, flat.size)
        check(lib.dr_axpby(beta, f32(residual), self.gamma, f32(flat), f32(out), flat.size), "compensate")
        return restore.working(out)  # the caller's kind and shape, CPU float32

    def _residual(self, name, size):
        """The residual kept for ``name`` as a flat float32 array of ``size`` entries."""
        residual = self.residuals.view(name, size)  # the buffer update wrote, found by identity
        if residual is None:  # a residual put in by hand (of any kind), or of the wrong size
            residual, _ = edge.to_core(self.residuals[name], what=f"residual of {name!r}")
        if size != residual.size:
            raise ValueError(f"tensor {name!r} has {size} elements but its residual has {residual.size}; "
                             "names must be stable and unique per parameter")
        return residual

    def fused_encode(self, tensor, name, compressor, restore=None):
        """With a compressor that offers ``compress_compensating`` (top-k), the step's
        compensate, compress and update in that one call: the compensated tensor is
        written straight into the residual's next buffer and the sent entries zeroed
        there, so there is no compensated tensor to keep (two buffers per name, not
        three). Same bits and state as the three calls; None (the three calls then run)
        for other compressors, or where this class or instance changed compensate or
        update, or the compressor changed what the call stands in for. ``restore``: the
        step's, for its working tensor (CPU float32, contiguous, the caller's kind:
        ``edge.to_working``), which C then reads in place; None for any other tensor,
        which crosses the edge here."""
        compensates = getattr(compressor, "compensates", None)
        if compensates is None or not compensates() or not keeps_methods(self, ResidualMemory, _STEP_METHODS):
            return None
        if restore is None:
            flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
            grad, numel = f32(flat), flat.size  # the pointer keeps flat alive
        else:
            grad, numel = working_pointer(tensor)
        residuals = self.residuals
        turned = residuals.turn(name, numel)  # the steady state: the two buffers swap roles
        if turned is None:
            residual = f32(self._residual(name, numel)) if name in residuals else None
            kept, _ = residuals.write(name, restore, numel)
            turned = f32(kept), residual
        kept, residual = turned
        tensors, ctx = compressor.compress_compensating(grad, numel, restore, name, residual, self.beta, self.gamma,
                                                        kept)
        if not ctx.finite:  # update keeps nothing of a non-finite tensor
            residuals.undo(name)
        return tensors, ctx

    def update(self, tensor, name, compressor, tensors, ctx):
        flat, restore, finite = crossed(tensor, ctx, f"tensor {name!r}")
        if not finite:
            return
        if flat.size >= ADOPT_MIN_NUMEL and getattr(compressor, "lost_in_place", False) is True:
            compensated = self.compensated.release(name, flat)
            if compensated is not None:
                # The compensated tensor becomes the residual: what was lost is written
                # over it in place (a sparsifier zeroes the entries it sent), with no copy
                # of it into a buffer of the state's. The spare that copy would have gone
                # into serves the next compensate instead.
                self.compensated.take_back(name, self.residuals.adopt(name, tensor, compensated))
                compressor.lost(flat, tensors, ctx, flat)
                return
        residual, _ = self.residuals.write(name, restore, flat.size)
        # A compressor that is not one of our classes (duck-typed) gets the default: decompress.
        lost = compressor.lost if is_compressor(compressor) else partial(Compressor.lost, compressor)
        lost(flat, tensors, ctx, residual)

    def rollback(self, name):
        self.residuals.undo(name)

    def forget(self, name):
        self.residuals.drop(name)
