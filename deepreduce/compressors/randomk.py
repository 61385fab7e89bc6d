import numpy as np

from .. import edge
from .._native import check, f32, lib, name_key, u32, workspace
from ..base import Compressor
from ..errors import FrameError
from ._sparse import SparseCtx
from .topk import topk_count
from ..checks import fraction


class RandomKCompressor(Compressor):
    """k distinct entries chosen uniformly at random; only the values travel.

    Every rank draws the same indices from a counter-based generator keyed by (tensor
    name, per-name step), so the payloads line up and sum with allreduce. No global RNG
    (torch's, NumPy's) is read or reseeded."""

    def __init__(self, compress_ratio):
        super().__init__()
        self.compress_ratio = fraction(compress_ratio, "compress_ratio")
        self.steps = {}  # name -> how many times it was compressed

    @classmethod
    def from_params(cls, params):
        return cls(params["compress_ratio"])

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        step = self.steps.get(name, 0)
        self.steps[name] = step + 1
        k = topk_count(flat.size, self.compress_ratio)
        indices = np.empty(k, dtype=np.uint32)
        _, work = workspace(lib.dr_randomk_workspace_size(flat.size))
        check(lib.dr_randomk(name_key(name, step), flat.size, k, u32(indices), work), f"random-k of {name!r}")
        values = np.empty(k, dtype=np.float32)
        check(lib.dr_gather(f32(flat), flat.size, u32(indices), k, f32(values)), f"random-k of {name!r}")
        return [values], SparseCtx(flat.size, indices, restore)

    def decompress(self, tensors, ctx):
        values, = tensors
        values = np.asarray(values)
        # The indices are this rank's own (ctx): the payload must carry exactly one value
        # for each, or the scatter would read past them.
        if values.dtype.kind != "f" or values.shape != ctx.indices.shape:
            raise FrameError(f"random-k payload: {values.size} values of dtype {values.dtype}, expected "
                             f"{ctx.indices.size} float values (k of this tensor); a payload of another tensor, "
                             "ratio or compressor")
        values = np.ascontiguousarray(values, dtype=np.float32)
        dense = edge.zeros(ctx.numel)
        check(lib.dr_scatter(u32(ctx.indices), f32(values), values.size, f32(dense), ctx.numel),
              "random-k decompress")
        return ctx.restore(dense)
