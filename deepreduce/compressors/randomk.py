import numpy as np

from .. import edge
from .._native import check, f32, ffi, lib, name_key, u32, workspace
from ..base import Compressor
from ..errors import FrameError
from ..state import Outputs
from ._sparse import SparseCtx, Sparsifier
from .topk import grown, topk_count
from ..checks import fraction


def draw_indices(numel, k, key):
    """k distinct ascending uint32 indices below numel, drawn by the C core from the
    counter-based stream ``key``: the same on every rank that derives the same key."""
    indices = np.empty(k, dtype=np.uint32)
    _, work = workspace(lib.dr_randomk_workspace_size(numel))
    check(lib.dr_randomk(key, numel, k, u32(indices), work), "random-k index draw")
    return indices


def sparsify(tensor, compress_ratio):
    """GRACE's helper: ``(indices, values)`` of k = max(1, int(n·ratio)) random entries of
    the flattened tensor, indices int64 and values in the tensor's dtype, of its kind and
    device. As GRACE's, it draws from the global generator (torch's for a tensor,
    NumPy's for an array), so seeding that reproduces it; the k indices are distinct."""
    flat, _ = edge.to_core(tensor, what="tensor")
    if edge.is_torch(tensor):
        import torch
        key = int(torch.randint(0, 2 ** 62, (1,)).item())
    else:
        key = int(np.random.randint(0, 2 ** 62, dtype=np.int64))
    indices = draw_indices(flat.size, topk_count(flat.size, compress_ratio), key)
    values = flat[indices]
    return edge.to_kind(indices.astype(np.int64), tensor), edge.to_kind(values, tensor, tensor.dtype)


class RandomKCompressor(Compressor):
    """k distinct entries chosen uniformly at random; only the values travel.

    Every rank draws the same indices from a counter-based generator keyed by (tensor
    name, ``global_step``), so the payloads line up and sum with allreduce. As in GRACE,
    ``global_step`` counts every compress call (all ranks call in the same order); unlike
    GRACE, no global RNG (torch's, NumPy's) is read or reseeded, and the k indices are
    distinct (GRACE drew them with replacement).

    A tensor holding a NaN or an infinity sends k NaN values, so the sum is non-finite on
    every rank wherever that rank's NaN sat.

    The draw, the values and the check for Inf/NaN are one call into C
    (``dr_randomk_sparsify``), and the indices and values go into arrays from pools per
    tensor name (``state.Outputs``), so steady state takes no fresh pages. The values
    travel exactly, so what a step loses is the tensor with them zeroed, as a
    sparsifier's (``lost``)."""

    payload_is_scratch = True  # the values are this compressor's own array, read by nothing else
    lost_in_place = True  # neither the payload nor the ctx reads the tensor once lost has run
    lost = Sparsifier.lost

    def __init__(self, compress_ratio):
        super().__init__()
        self.compress_ratio = fraction(compress_ratio, "compress_ratio")
        self.global_step = 0
        self.indices = Outputs(keep=1, dtype=np.uint32)  # drawn indices, kept by each step's ctx
        self.payloads = Outputs(keep=1)  # the values sent
        self.outputs = Outputs()  # decompressed results, reused per name once released
        self._work = np.empty(0, dtype=np.uint8)  # the draw's bitmap, grown once, reused

    @classmethod
    def from_params(cls, params):
        return cls(params["compress_ratio"])

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        key = name_key(name, self.global_step)
        self.global_step += 1
        k = topk_count(flat.size, self.compress_ratio)
        indices, values = self.indices.take(name, k), self.payloads.take(name, k)
        self._work = grown(self._work, lib.dr_randomk_workspace_size(flat.size))
        status = lib.dr_randomk_sparsify(key, f32(flat), flat.size, k, u32(indices), f32(values),
                                         ffi.from_buffer(self._work))
        finite = status != lib.DR_E_NUMERIC
        if finite:
            check(status, f"random-k of {name!r}")
        else:
            values = edge.nan_filled(k)
        return [restore.wrap(values)], SparseCtx(flat.size, indices, restore, tensor, flat, finite, name)

    def decompress(self, tensors, ctx):
        values, = tensors
        return ctx.restore(self._scattered(self._values(values, ctx), ctx))

    def decompress_aggregate(self, payloads, ctx, divisor=1):
        """Every rank drew the same indices, so the ranks' values are summed (and
        divided) as k-vectors and scattered once: the same bits as decompressing each,
        summing and dividing the dense tensors. A subclass that decompresses or
        aggregates its own way gets the default."""
        if len(payloads) == 1 or not self._sums_as(RandomKCompressor):
            return super().decompress_aggregate(payloads, ctx, divisor)
        total = np.zeros(ctx.indices.size, dtype=np.float32)
        for payload in payloads:
            values, = payload
            np.add(total, self._values(values, ctx), out=total)
        if divisor != 1:
            np.divide(total, np.float32(divisor), out=total)
        return ctx.restore(self._scattered(total, ctx))

    @staticmethod
    def _values(values, ctx):
        """One rank's payload as contiguous float32 values, checked against ctx."""
        values = edge.as_numpy(values)
        # The indices are this rank's own (ctx): the payload must carry exactly one value
        # for each, or the scatter would read past them.
        if values.dtype.kind != "f" or values.shape != ctx.indices.shape:
            raise FrameError(f"random-k payload: {values.size} values of dtype {values.dtype}, expected "
                             f"{ctx.indices.size} float values (one per index this rank drew); a payload of "
                             "another tensor, ratio or compressor")
        return np.ascontiguousarray(values, dtype=np.float32)

    def _scattered(self, values, ctx):
        """The dense flat tensor with values at this rank's indices, zeros elsewhere."""
        dense = self.outputs.zeros(ctx.name, ctx.numel)
        check(lib.dr_scatter(u32(ctx.indices), f32(values), values.size, f32(dense), ctx.numel),
              "random-k decompress")
        return dense
