import numpy as np

from .._native import check, f32, ffi, lib, u32
from ._sparse import Sparsifier
from ..checks import fraction


def topk_count(numel, compress_ratio):
    """k = max(1, int(numel * ratio)); 0 for an empty tensor (nothing to select)."""
    return min(numel, max(1, int(numel * compress_ratio)))


class TopKCompressor(Sparsifier):
    """The k = max(1, int(n·compress_ratio)) entries of largest |g|, exact (radix select
    in C), sent as one framed (indices, values) buffer. Use with allgather.

    ``kernel`` is accepted for GRACE compatibility and ignored: selection is always C."""

    frame_kind = "DR_KIND_TOPK"

    def __init__(self, compress_ratio, kernel="torch"):
        super().__init__()
        self.compress_ratio = fraction(compress_ratio, "compress_ratio")
        self.kernel = kernel
        self._work = np.empty(0, dtype=np.uint8)  # scratch of the fast select, grown once, reused

    @classmethod
    def from_params(cls, params):
        return cls(params["compress_ratio"], params["kernel"])

    def select(self, flat, name):
        """Ascending uint32 indices of the k largest magnitudes."""
        k = topk_count(flat.size, self.compress_ratio)
        indices = np.empty(k, dtype=np.uint32)
        needed = lib.dr_topk_workspace_size(flat.size, k)
        if self._work.nbytes < needed:
            self._work = np.empty(needed, dtype=np.uint8)
        check(lib.dr_topk_select(f32(flat), flat.size, k, u32(indices), ffi.from_buffer(self._work)),
              f"top-k of {name!r}")
        return indices
