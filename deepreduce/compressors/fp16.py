import numpy as np

from .. import edge
from .._native import check, f32, lib, u16
from ..base import Compressor
from ..errors import FrameError


class FP16Compressor(Compressor):
    """Half precision on the wire (round to nearest even in C); sums with allreduce."""

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        half = np.empty(flat.size, dtype=np.float16)
        check(lib.dr_f32_to_f16(f32(flat), u16(half.view(np.uint16)), flat.size), f"fp16 of {name!r}")
        return [restore.wrap(half)], restore

    def decompress(self, tensors, ctx):
        half, = tensors
        half = np.ascontiguousarray(edge.as_numpy(half), dtype=np.float16).reshape(-1)
        if half.size != ctx.numel:
            raise FrameError(f"fp16 payload of {half.size} values for a tensor of {ctx.numel}")
        out = np.empty(half.size, dtype=np.float32)
        check(lib.dr_f16_to_f32(u16(half.view(np.uint16)), f32(out), half.size), "fp16 decompress")
        return ctx(out)
