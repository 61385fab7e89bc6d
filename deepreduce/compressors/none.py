from .. import edge
from .._native import result_finite
from ..base import Compressor
from ..checks import dense_payload


class NoneCtx:
    """What decompress needs of a compress: the way back to the caller's kind, dtype and
    shape, and the element count. ``finite_result``: the decompressed result, when the
    sweep of its values found no Inf or NaN (``base.vouched_finite``)."""
    __slots__ = ("restore", "numel", "finite_result")

    def __init__(self, restore, numel):
        self.restore = restore
        self.numel = numel
        self.finite_result = None


class NoneCompressor(Compressor):
    """No compression: the float32 gradient itself (sums with allreduce). NaN and
    infinities travel as they are."""

    def compress(self, tensor, name):
        # The payload is the tensor as the roles see it (CPU float32, the caller's kind and
        # shape): for a CPU float32 tensor that is the tensor itself, which costs no
        # crossing to NumPy and back (two of the six a 'none' step made).
        working, numel, restore = edge.to_working(tensor, "tensor", name)
        return [working], NoneCtx(restore, numel)

    def decompress(self, tensors, ctx):
        tensor, = tensors
        values = dense_payload(tensor, ctx.numel, "none payload")
        result = ctx.restore(values)
        # The step would sweep the result for Inf/NaN through torch; the values are at hand
        # here as NumPy, where the sweep is one C call.
        if result_finite(values, "none payload"):
            ctx.finite_result = result
        return result
