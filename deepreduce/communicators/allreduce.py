import numpy as np

from .. import edge
from .._native import half_quotient
from ..base import Communicator, decodes_numpy


class Allreduce(Communicator):
    """Sum every payload tensor across ranks, then decompress once. For compressors whose
    payloads add up elementwise (none, fp16, randomk, powersgd)."""

    @staticmethod
    def link_bytes_per_payload_byte(size):
        return 2 * (size - 1) / size  # a ring allreduce

    def send_receive(self, tensors, name, ctx):
        # Summed in a copy where the payload may share memory with the memory's or the
        # caller's tensor ('none' sends the tensor itself).
        in_place = getattr(self.compressor, "payload_is_scratch", False) is True
        summands = [self._summand(payload, name, i, in_place) for i, payload in enumerate(tensors)]
        # Our own decompress takes the sums as NumPy; one written against GRACE's classes
        # gets them in the payload's kind.
        as_sent = not decodes_numpy(self.codec())
        size = self.world_size
        reduced = []
        for i, (summand, original) in enumerate(zip(summands, tensors)):
            # A float16 sum passes 65504 (Inf) where every rank's value and their mean fit:
            # with AMP, GradScaler then skipped steps at a P times smaller scale. Each rank
            # sends its share of the mean instead, as torch's fp16_compress_hook does (at
            # P = 2 the same bits, the halving being exact).
            shared = summand.dtype == np.float16 and self.compressor.average and size > 1
            if shared:
                summand = half_quotient(summand, size)
            summed = self.transport.allreduce(summand, name if i == 0 else f"{name}#{i}")
            summed = edge.like(summed, original) if as_sent else summed
            reduced.append(summed if shared else self.average(summed))
        return self.decompress(reduced, ctx)

    def _summand(self, payload, name, i, in_place):
        """The NumPy array the transport sums for payload ``i``: the payload's own memory
        where ``in_place``, else a copy in a buffer kept for the name (a CPU float32 torch
        tensor copied from its data pointer, without a crossing to NumPy)."""
        if not in_place and edge.cpu_float32_tensor(payload):
            return self.buffers.copy_of_tensor(("summed", name, i), payload)
        array = edge.as_numpy(payload)
        # A frame (uint8) is bytes, not numbers: the sum of frames is garbage that only
        # fails later, at decode, with a message about dtypes. Every rank sees the same
        # compressor, so all refuse here together, before any collective, and none is
        # left waiting.
        if array.dtype == np.uint8:
            raise ValueError(
                f"{type(self.compressor).__name__} sends framed byte payloads, which cannot be "
                f"summed by an allreduce (tensor {name!r}); use communicator='allgather'")
        return array if in_place else self.buffers.copy_of(("summed", name, i), array)
