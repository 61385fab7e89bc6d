import numpy as np

from .. import edge
from ..base import Communicator, decodes_numpy


class Allreduce(Communicator):
    """Sum every payload tensor across ranks, then decompress once. For compressors whose
    payloads add up elementwise (none, fp16, randomk, powersgd)."""

    def send_receive(self, tensors, name, ctx):
        payloads = [edge.as_numpy(t) for t in tensors]
        for payload in payloads:
            # A frame (uint8) is bytes, not numbers: the sum of frames is garbage that
            # only fails later, at decode, with a message about dtypes. Every rank sees
            # the same compressor, so all refuse here together and none is left waiting.
            if payload.dtype == np.uint8:
                raise ValueError(
                    f"{type(self.compressor).__name__} sends framed byte payloads, which cannot be "
                    f"summed by an allreduce (tensor {name!r}); use communicator='allgather'")
        # Summed in a copy where the payload may share memory with the memory's or the
        # caller's tensor ('none' sends the tensor itself).
        in_place = getattr(self.compressor, "payload_is_scratch", False) is True
        # Our own decompress takes the sums as NumPy; one written against GRACE's classes
        # gets them in the payload's kind.
        as_sent = not decodes_numpy(self.codec())
        reduced = []
        for i, (payload, original) in enumerate(zip(payloads, tensors)):
            summed = self.transport.allreduce(payload if in_place else self.buffers.copy_of(("summed", name, i), payload),
                                              name if i == 0 else f"{name}#{i}")
            reduced.append(self.average(edge.like(summed, original) if as_sent else summed))
        return self.decompress(reduced, ctx)
