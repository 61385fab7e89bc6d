import numpy as np

from .. import edge
from .._native import check, f32, lib, u16
from ..base import Compressor
from ..errors import FrameError


class FP16Compressor(Compressor):
    """Half precision on the wire (round to nearest even in C); sums with allreduce.
    |x| above 65504 (float16's largest) rounds to ±Inf, as torch's ``.half()``, its fp16
    DDP hook and GRACE do: with AMP the non-finite aggregate makes GradScaler skip the
    step and lower the scale (docs/reliability.md)."""

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        half = np.empty(flat.size, dtype=np.float16)
        check(lib.dr_f32_to_f16(f32(flat), u16(half.view(np.uint16)), flat.size), f"fp16 of {name!r}")
        return [restore.wrap(half)], restore

    def decompress(self, tensors, ctx):
        half, = tensors
        half = edge.as_numpy(half)
        if half.dtype != np.float16 or half.size != ctx.numel:
            raise FrameError(f"fp16 payload: {half.size} values of dtype {half.dtype}, expected {ctx.numel} float16 "
                             "values; a payload of another tensor or compressor")
        half = np.ascontiguousarray(half.reshape(-1))
        out = np.empty(half.size, dtype=np.float32)
        check(lib.dr_f16_to_f32(u16(half.view(np.uint16)), f32(out), half.size), "fp16 decompress")
        return ctx(out)
