import numpy as np

from .._native import check, f32, ffi, lib, u32
from ._sparse import Sparsifier
from ..checks import number


class ThresholdCompressor(Sparsifier):
    """Every entry with |g| >= threshold. The count varies by rank and step, and may be
    zero: an empty payload is a legal frame."""

    frame_kind = "DR_KIND_THRESHOLD"

    def __init__(self, threshold):
        super().__init__(tensors_size_are_same=False)
        self.threshold = number(threshold, "threshold", 0.0)
        self.room = {}  # per tensor name: entries pick makes room for (the last count, and a margin)

    @classmethod
    def from_params(cls, params):
        return cls(params["threshold"])

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
