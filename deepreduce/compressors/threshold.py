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
