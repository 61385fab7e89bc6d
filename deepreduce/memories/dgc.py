"""Deep Gradient Compression's memory (Lin et al. 2018): momentum correction and local
gradient accumulation, with optional gradient clipping.

Per tensor:  u ← m·u + g  (momentum),  v ← v + u  (accumulation); v is compressed; where
an entry was sent, u and v are zeroed (momentum factor masking). With clipping, g is first
clamped to ±sqrt(Σ_ranks ||g||² / world_size), the global norm agreed by an allreduce
(GRACE's version crashed: it divided the None that all_reduce returns).
"""
import numpy as np

from .. import edge
from .._native import check, f32, ffi, lib, u32
from ..base import Memory, crossed
from ..checks import flag, number
from ..state import HoldsTensorStates, Outputs, StateAttribute, TensorState
from ..transports.binding import TransportAtFirstUse


class DgcMemory(HoldsTensorStates, TransportAtFirstUse, Memory):
    # GRACE's dicts of tensors: assignable as GRACE's were (state.StateAttribute).
    residuals = StateAttribute()
    gradients = StateAttribute()

    def __init__(self, momentum=0.9, gradient_clipping=False, world_size=None, transport=None):
        self.momentum = number(momentum, "momentum", 0.0, 1.0)
        self.gradient_clipping = flag(gradient_clipping, "gradient_clipping")
        self._bind_later(transport, world_size)  # the clipping's allreduce
        # GRACE's names: ``residuals`` holds the momentum u, ``gradients`` the accumulation
        # v; both in the caller's kind and shape.
        self.residuals = TensorState()
        self.gradients = TensorState()
        # compensate's results: copies of v (update zeroes v in place where entries were
        # sent, and the compressor may still read what it was given), reused per name
        # once released.
        self._compensated = Outputs()

    @classmethod
    def from_params(cls, params, compressor):
        return cls(params["momentum"], params["gradient_clipping"], params["world_size"], params["transport"])

    @property
    def world_size(self):
        """GRACE's attribute: the world size the clipping's transport is bound with (None:
        the engine's)."""
        return self._world_size

    @world_size.setter
    def world_size(self, value):
        self._world_size = value

    def _clip(self, flat, name):
        squares = np.array([float(flat @ flat)], dtype=np.float64)
        total = self.transport.allreduce(squares, f"{name}/clip")[0]
        limit = np.float32(np.sqrt(total / self.transport.size))
        return np.clip(flat, -limit, limit)

    def compensate(self, tensor, name):
        self.residuals.settle(name)
        self.gradients.settle(name)
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        if self.gradient_clipping:
            flat = self._clip(flat, name)
        u, u_old = self.residuals.write(name, restore, flat.size)
        v, v_old = self.gradients.write(name, restore, flat.size)
        first = u_old is None or v_old is None  # the first step: u = v = g
        compensated = self._compensated.take(name, flat.size)
        # u, v and the copy of v in one sweep, which also says whether they are finite.
        finite = lib.dr_dgc_accumulate(self.momentum, ffi.NULL if first else f32(u_old),
                                       ffi.NULL if first else f32(v_old), f32(flat), f32(u), f32(v),
                                       f32(compensated), flat.size)
        check(min(finite, 0), "dgc momentum and accumulation")
        if not finite:  # an Inf or a NaN (in g, or a sum overflowed): the step will be
            self.residuals.undo(name)  # skipped, so u and v stay as they were
            self.gradients.undo(name)
        return restore.working(compensated)

    def update(self, tensor, name, compressor, tensors, ctx):
        flat, _, finite = crossed(tensor, ctx, f"tensor {name!r}")
        if not finite:
            return
        indices = getattr(ctx, "indices", None)
        if indices is None:  # a compressor that does not say what it sent: mask by value
            sent, _ = edge.to_core(compressor.decompress(tensors, ctx))
            indices = np.flatnonzero(sent).astype(np.uint32)
        for state in (self.residuals, self.gradients):
            buffer = state.view(name, flat.size)
            if buffer is not None:
                check(lib.dr_zero_at(u32(indices), indices.size, f32(buffer), buffer.size), "dgc masking")

    def rollback(self, name):
        self.residuals.undo(name)
        self.gradients.undo(name)

    def forget(self, name):
        self.residuals.drop(name)
        self.gradients.drop(name)
