import numpy as np

from .._native import check, f32, ffi, lib, u32
from ._framed import StepKeys
from .topk import TopKCompressor, grown, topk_count


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
        self._work = grown(self._work, lib.dr_dgc_workspace_size(flat.size))
        check(lib.dr_dgc_select(f32(flat), flat.size, k, self.keys.next(name), u32(indices), indices.size, count,
                                ffi.from_buffer(self._work)), f"dgc selection of {name!r}")
        return indices[:count[0]]

    def select_with_values(self, flat, name):
        """The same selection as ``select`` with its values, or None where flat holds an
        Inf or a NaN, from one sweep of flat in C (dr_dgc_sparsify: the candidates past a
        cut below the threshold carry the values and the largest magnitude):
        ``Sparsifier.pick``. The arrays, room for the most a count can reach, come from
        pools per name (``Sparsifier.picked_indices``)."""
        k = topk_count(flat.size, self.compress_ratio)
        cap = lib.dr_dgc_max_count(k)
        indices, values = self.picked_indices.take(name, cap), self.picked_values.take(name, cap)
        count = ffi.new("size_t *")
        self._work = grown(self._work, lib.dr_dgc_sparsify_workspace_size(flat.size, k))
        status = lib.dr_dgc_sparsify(f32(flat), flat.size, k, self.keys.next(name), u32(indices), f32(values),
                                     cap, count, ffi.from_buffer(self._work))
        if status == lib.DR_E_NUMERIC:
            return None
        check(status, f"dgc selection of {name!r}")
        return indices[:count[0]], values[:count[0]]
