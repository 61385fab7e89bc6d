import numpy as np

from .. import edge
from .._native import check, f32, lib, u16
from ..base import Compressor
from ..errors import FrameError
from ..state import Outputs


class FP16Ctx:
    """What decompress needs of a compress: the caller's kind and shape, and the tensor's
    name (its output buffers are reused per name). ``finite_result``: the decompressed
    result, when its conversion found no Inf or NaN (``base.vouched_finite``)."""
    __slots__ = ("restore", "name", "finite_result")

    def __init__(self, restore, name):
        self.restore, self.name = restore, name
        self.finite_result = None


class FP16Compressor(Compressor):
    """Half precision on the wire (round to nearest even in C); sums with allreduce.
    |x| above 65504 (float16's largest) rounds to ±Inf, as torch's ``.half()``, its fp16
    DDP hook and GRACE do: with AMP the non-finite aggregate makes GradScaler skip the
    step and lower the scale (docs/reliability.md).

    Payloads and results come from pools per tensor name (``state.Outputs``): a buffer
    is written again only once nothing refers to it, so steady state allocates none (a
    fresh array's first touch costs more than the conversion)."""

    payload_is_scratch = True

    def __init__(self):
        super().__init__()
        self.payloads = Outputs(dtype=np.float16)
        self.outputs = Outputs()

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        half = self.payloads.take(name, flat.size)
        check(lib.dr_f32_to_f16(f32(flat), u16(half.view(np.uint16)), flat.size), f"fp16 of {name!r}")
        return [restore.wrap(half)], FP16Ctx(restore, name)

    def decompress(self, tensors, ctx):
        half, = tensors
        half = edge.as_numpy(half)
        if half.dtype != np.float16 or half.size != ctx.restore.numel:
            raise FrameError(f"fp16 payload: {half.size} values of dtype {half.dtype}, expected "
                             f"{ctx.restore.numel} float16 values; a payload of another tensor or compressor")
        half = np.ascontiguousarray(half.reshape(-1))
        out = self.outputs.take(ctx.name, half.size)
        finite = lib.dr_f16_to_f32_finite(u16(half.view(np.uint16)), f32(out), half.size)
        check(min(finite, 0), "fp16 decompress")
        result = ctx.restore(out)
        ctx.finite_result = result if finite == 1 else None
        return result
