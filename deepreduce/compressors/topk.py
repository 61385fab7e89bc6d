import numpy as np

from .. import edge
from .._native import check, f32, ffi, lasting_pointer, lib, u32
from ._sparse import SparseCtx, Sparsifier, selected_values
from ..base import keeps_methods
from ..checks import fraction

# The compressor's methods compress_compensating stands in for (the memory checks its own
# compensate and update: ResidualMemory.fused_encode).
_COMPENSATING_STANDS_IN_FOR = ("compress", "pick", "select", "select_with_values", "lost", "nonfinite_payload")


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
        self._work_pointer = (None, None)  # (_work, a pointer to it): compress_compensating's, made once
        self._plans = {}  # numel -> compress_compensating's sizes (_plan)

    @classmethod
    def from_params(cls, params):
        return cls(params["compress_ratio"], params["kernel"])

    def __getstate__(self):
        # Pickled and deep-copied without the workspace and its C pointer (which cannot be
        # pickled): the copy makes its own at its first compress. (The workspace, 1.25x a
        # large tensor, went into every checkpoint.)
        return dict(self.__dict__, _work=np.empty(0, dtype=np.uint8), _work_pointer=(None, None))

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

    def compensates(self):
        """Whether ``compress_compensating`` may stand in for this compressor's compress
        and lost: neither a subclass nor the instance changed a method it stands in for."""
        return keeps_methods(self, TopKCompressor, _COMPENSATING_STANDS_IN_FOR)

    def compress_compensating(self, grad, numel, restore, name, residual, beta, gamma, kept):
        """A residual memory's step with this compressor in one C call
        (``dr_topk_residual_encode``): ``compress`` of the compensated tensor
        beta·residual + gamma·grad (grad itself where ``residual`` is None), with what it
        loses, the compensated tensor with the sent entries zeroed, written into ``kept``:
        the bits of the memory's compensate, this compress and the memory's update.
        ``grad``, ``residual`` and ``kept`` are ``float *`` to ``numel`` floats (their
        owners kept alive by the caller), ``kept`` apart from grad; ``restore`` is
        grad's. Returns ``(tensors, ctx)``; where the compensated tensor holds an Inf or
        a NaN, the non-finite marker (``ctx.finite`` False) and ``kept`` undefined, for
        the memory to take back."""
        plan = self._plans.get(numel)
        if plan is None or plan[0] != self.compress_ratio:
            plan = self._plan(numel)
        _, k, frame_size, work_size = plan
        frame, frame_pointer = self.frames.take_pointed(name, frame_size)
        work = self._work = grown(self._work, work_size)
        if self._work_pointer[0] is not work:  # grown here, or by select
            self._work_pointer = (work, lasting_pointer(work))
        written = ffi.new("size_t *")
        status = lib.dr_topk_residual_encode(ffi.NULL if residual is None else residual, beta, grad, gamma, numel,
                                             k, kept, getattr(lib, self.frame_kind), frame_pointer,
                                             frame_size, written, self._work_pointer[1])
        if status:  # not DR_OK (the message is made only then)
            if status == lib.DR_E_NUMERIC:
                return self.nonfinite_payload(numel, restore, name)
            check(status, f"top-k of {name!r} with its residual")
        # The indices sent are read from the frame if asked for (SparseCtx.indices).
        payload = restore.wrap(frame)
        return [payload], SparseCtx(numel, None, restore, None, None, True, name, (payload, frame))

    def _plan(self, numel):
        """``(compress_ratio, k, frame bytes, workspace bytes)`` of compress_compensating
        for tensors of ``numel`` entries, kept per size (a model has a few dozen) and made
        again when the ratio changed (a script may set compress_ratio between steps)."""
        k = topk_count(numel, self.compress_ratio)
        plan = self._plans[numel] = (self.compress_ratio, k, lib.dr_sparse_raw_frame_size(numel, k),
                                     lib.dr_topk_residual_workspace_size(numel, k))
        return plan
