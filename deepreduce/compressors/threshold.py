import numpy as np

from .. import edge
from .._native import check, f32, ffi, lib, u8, u32
from ._sparse import SparseCtx, Sparsifier
from ..base import keeps_methods
from ..checks import number

# What the one-call frame (ThresholdCompressor.compress) stands in for: a subclass or an
# instance that changed one of them gets Sparsifier's calls, which run it.
_FRAME_STANDS_IN_FOR = ("pick", "select", "select_with_values", "lost")


class ThresholdCtx(SparseCtx):
    """A threshold frame's ctx: ``SparseCtx``, and the threshold it was cut at, by which
    ``lost`` zeroes what the frame sent when the ctx holds no indices (the one-call
    frame writes none)."""

    __slots__ = ("threshold",)


class ThresholdCompressor(Sparsifier):
    """Every entry with |g| >= threshold. The count varies by rank and step, and may be
    zero: an empty payload is a legal frame."""

    frame_kind = "DR_KIND_THRESHOLD"

    def __init__(self, threshold):
        super().__init__(tensors_size_are_same=False)
        self.threshold = number(threshold, "threshold", 0.0)
        self.room = {}  # per tensor name: entries pick makes room for (the last count, and a margin)
        # Per tensor name: whether its last selection was dense (the frame's bitmap layout:
        # more than one entry in 32 sent), and its largest frame so far, the room the
        # one-call frame asks the pool for (``Outputs`` gives a buffer a quarter larger).
        self.dense = {}
        self.frame_room = {}

    @classmethod
    def from_params(cls, params):
        return cls(params["threshold"])

    def compress(self, tensor, name):
        """Sparsifier's compress; where this name's last selection was dense, the frame
        straight from the tensor in one C call (``dr_threshold_encode``: the same bytes,
        and no index or value arrays written and read back, which are 8 bytes an entry
        sent). A sparse selection takes Sparsifier's calls, which read the tensor once
        where the one call reads it twice for the lists."""
        if not self.dense.get(name) or not keeps_methods(self, ThresholdCompressor, _FRAME_STANDS_IN_FOR):
            tensors, ctx = super().compress(tensor, name)
            if ctx.finite:
                self._remember(name, ctx.numel, ctx.indices.size)
            return tensors, ctx
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        written, count = ffi.new("size_t *"), ffi.new("size_t *")
        while True:
            frame = self.frames.take(name, self.frame_room.get(name, 0))
            status = lib.dr_threshold_encode(lib.DR_KIND_THRESHOLD, f32(flat), flat.size, self.threshold, u8(frame),
                                             frame.nbytes, written, count)
            if status != lib.DR_E_DST_TOO_SMALL:
                break
            self.frame_room[name] = written[0]
            frame = None  # the pool's buffer is free again for the next take
        if status == lib.DR_E_NUMERIC:
            return self.nonfinite_payload(flat.size, restore, name, tensor, flat)
        check(status, f"threshold of {name!r}")
        self._remember(name, flat.size, count[0])
        frame = frame[:written[0]]
        payload = restore.wrap(frame)
        ctx = ThresholdCtx(flat.size, None, restore, tensor, flat, True, name, (payload, frame))
        ctx.threshold = self.threshold
        return [payload], ctx

    def _remember(self, name, numel, count):
        """Whether this name's selection of ``count`` entries was dense, and its largest
        frame so far."""
        self.dense[name] = lib.dr_sparse_raw_layout(numel, count) == lib.DR_SPARSE_BITMAP
        self.frame_room[name] = max(self.frame_room.get(name, 0), lib.dr_sparse_raw_frame_size(numel, count))

    def lost(self, flat, tensors, ctx, out):
        """Sparsifier's; for a frame made in one call (no indices kept), flat with the
        entries that reach the frame's threshold zeroed (``dr_threshold_zero``), which
        are the ones it sent."""
        if not isinstance(ctx, ThresholdCtx) or ctx._indices is not None:
            return super().lost(flat, tensors, ctx, out)
        check(lib.dr_threshold_zero(f32(flat), flat.size, ctx.threshold, f32(out)), "residual")

    def select(self, flat, name):
        count = ffi.new("size_t *")
        check(lib.dr_threshold_count(f32(flat), flat.size, self.threshold, count), f"threshold of {name!r}")
        indices = np.empty(count[0], dtype=np.uint32)
        check(lib.dr_threshold_select(f32(flat), flat.size, self.threshold, u32(indices), indices.size, count),
              f"threshold of {name!r}")
        return indices

    def select_with_values(self, flat, name):
        """``select``'s indices with their values, or None where flat holds an Inf or a
        NaN, in one sweep of flat in C (dr_threshold_sparsify), with room for the last
        count of this name and a quarter more. When more qualify, C says how many and a
        second call with that room answers: ``Sparsifier.pick``. The arrays come from pools
        per name (``Sparsifier.picked_indices``): the room changes only when outgrown."""
        count = ffi.new("size_t *")
        while True:
            room = self.room.get(name, 0)
            indices, values = self.picked_indices.take(name, room), self.picked_values.take(name, room)
            status = lib.dr_threshold_sparsify(f32(flat), flat.size, self.threshold, u32(indices), f32(values), room,
                                               count)
            if status != lib.DR_E_DST_TOO_SMALL:
                break
            self.room[name] = min(flat.size, count[0] + count[0] // 4)
        if status == lib.DR_E_NUMERIC:
            return None
        check(status, f"threshold of {name!r}")
        return indices[:count[0]], values[:count[0]]
