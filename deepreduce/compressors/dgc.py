import numpy as np

from .._native import check, f32, ffi, lib, u32, workspace
from ._framed import StepKeys
from .topk import TopKCompressor, topk_count


class DgcCompressor(TopKCompressor):
    """Deep Gradient Compression's sparsifier (Lin et al. 2018): the threshold is
    estimated from a 1% sample and adjusted at most 10 times until the count is within
    [0.7k, 1.3k]; cheaper than exact top-k, and the count varies by rank."""

    frame_kind = "DR_KIND_DGC"

    def __init__(self, compress_ratio):
        super().__init__(compress_ratio)
        self.tensors_size_are_same = False
        self.keys = StepKeys()

    @classmethod
    def from_params(cls, params):
        return cls(params["compress_ratio"])

    def select(self, flat, name):
        k = topk_count(flat.size, self.compress_ratio)
        if k == 0:
            return np.empty(0, dtype=np.uint32)
        indices = np.empty(lib.dr_dgc_max_count(k), dtype=np.uint32)
        count = ffi.new("size_t *")
        _, work = workspace(lib.dr_dgc_workspace_size(flat.size))
        check(lib.dr_dgc_select(f32(flat), flat.size, k, self.keys.next(name), u32(indices), indices.size, count, work),
              f"dgc selection of {name!r}")
        return indices[:count[0]]
