import numpy as np

from .. import edge
from .._native import check, f32, lib, u32
from ..base import Compressor
from . import _sparse


def topk_count(numel, compress_ratio):
    return max(1, int(numel * compress_ratio))


class TopKCompressor(Compressor):
    """The k = max(1, int(n·compress_ratio)) entries of largest |g|, exact (radix select
    in C), sent as one framed (indices, values) buffer. Use with allgather.

    ``kernel`` is accepted for GRACE compatibility and ignored: selection is always C."""

    def __init__(self, compress_ratio, kernel="torch"):
        super().__init__()
        if not 0.0 < compress_ratio <= 1.0:
            raise ValueError(f"compress_ratio must be in (0, 1], got {compress_ratio!r}")
        self.compress_ratio = compress_ratio
        self.kernel = kernel

    @classmethod
    def from_params(cls, params):
        return cls(params["compress_ratio"], params["kernel"])

    def select(self, flat, name):
        """Ascending uint32 indices of the k largest magnitudes."""
        k = topk_count(flat.size, self.compress_ratio)
        indices = np.empty(k, dtype=np.uint32)
        check(lib.dr_topk(f32(flat), flat.size, k, u32(indices)), f"top-k of {name!r}")
        return indices

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        indices = self.select(flat, name)
        frame = _sparse.encode(lib.DR_KIND_TOPK, flat, indices, f"top-k of {name!r}")
        return [frame], _sparse.SparseCtx(flat.size, indices, restore)

    def decompress(self, tensors, ctx):
        frame, = tensors
        return ctx.restore(_sparse.decode(frame, ctx.numel, "top-k payload"))
