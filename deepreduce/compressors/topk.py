import numpy as np

from .. import edge
from .._native import check, f32, ffi, lib, u32
from ._sparse import Sparsifier, selected_values
from ..checks import fraction


def topk_count(numel, compress_ratio):
    """k = max(1, int(numel * ratio)); 0 for an empty tensor (nothing to select)."""
    return min(numel, max(1, int(numel * compress_ratio)))


def grown(work, needed):
    """``work`` (a uint8 scratch array), or a larger one where a C kernel needs more than
    its ``needed`` bytes (kept and reused by the caller: fresh pages cost a fault each)."""
    return work if work.nbytes >= needed else np.empty(needed, dtype=np.uint8)


def select_topk(flat, k, work):
    """Ascending uint32 indices of the k largest |flat| (exact radix select in C).
    ``work`` is a uint8 scratch array, grown and returned: ``(indices, work)``."""
    indices = np.empty(k, dtype=np.uint32)
    work = grown(work, lib.dr_topk_workspace_size(flat.size, k))
    check(lib.dr_topk_select(f32(flat), flat.size, k, u32(indices), ffi.from_buffer(work)), "top-k selection")
    return indices, work


def sparsify_topk(flat, k, work, what, indices, values):
    """``((indices, values), work)``: select_topk's indices with their float32 values, or
    None in their place where flat holds an Inf or a NaN (found by the select's own
    sweep); ``work`` as select_topk's. ``indices`` and ``values`` (uint32 and float32
    arrays of k, to be written) are the caller's, from its pools."""
    work = grown(work, lib.dr_topk_workspace_size(flat.size, k))
    status = lib.dr_topk_sparsify(f32(flat), flat.size, k, u32(indices), f32(values), ffi.from_buffer(work))
    if status == lib.DR_E_NUMERIC:
        return None, work
    check(status, what)
    return (indices, values), work


def sparsify(tensor, compress_ratio, kernel="torch"):
    """GRACE's helper: ``(values, indices)`` of the k = max(1, int(n·ratio)) entries of
    largest magnitude of the flattened tensor; values in the tensor's dtype, indices
    int32, both of the tensor's kind and device. Indices come in ascending order
    (GRACE's torch.topk order was unspecified). ``kernel`` is accepted and ignored."""
    flat, _ = edge.to_core(tensor, what="tensor")
    indices, _ = select_topk(flat, topk_count(flat.size, compress_ratio), np.empty(0, dtype=np.uint8))
    values = selected_values(flat, indices)
    return edge.to_kind(values, tensor, tensor.dtype), edge.to_kind(indices.astype(np.int32), tensor)


def desparsify(tensors, numel):
    """GRACE's helper: the dense flat tensor of ``numel`` entries holding ``values`` at
    ``indices`` and zeros elsewhere, in the values' kind, dtype and device."""
    values, indices = tensors
    dense = edge.zeros(numel)
    vals = np.ascontiguousarray(edge.as_numpy(values), dtype=np.float32).reshape(-1)
    idx = np.ascontiguousarray(edge.as_numpy(indices)).reshape(-1)
    if idx.size != vals.size or (idx.size and (idx.min() < 0 or idx.max() >= numel)):
        raise ValueError(f"desparsify: {idx.size} indices for {vals.size} values, each must be in [0, {numel})")
    check(lib.dr_scatter(u32(idx.astype(np.uint32)), f32(vals), vals.size, f32(dense), numel), "desparsify")
    return edge.to_kind(dense, values, values.dtype)


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
        indices, self._work = select_topk(flat, topk_count(flat.size, self.compress_ratio), self._work)
        return indices

    def select_with_values(self, flat, name):
        """``select``'s indices with their values, or None where flat holds an Inf or a
        NaN (found by the select's own sweep): ``Sparsifier.pick``. Both arrays come from
        pools per name: k is the same at every step, so steady state takes no fresh
        pages (at 30% of 25.6M, 61 MB of them per step)."""
        k = topk_count(flat.size, self.compress_ratio)
        picked, self._work = sparsify_topk(flat, k, self._work, f"top-k selection of {name!r}",
                                           self.picked_indices.take(name, k), self.picked_values.take(name, k))
        return picked
