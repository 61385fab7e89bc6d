import numpy as np

from ..base import Communicator


class Allreduce(Communicator):
    """Sum every payload tensor across ranks, then decompress once. For compressors whose
    payloads add up elementwise (none, fp16, randomk, powersgd)."""

    def send_receive(self, tensors, name, ctx):
        for payload in tensors:
            # A frame (uint8) is bytes, not numbers: the sum of frames is garbage that
            # only fails later, at decode, with a message about dtypes. Every rank sees
            # the same compressor, so all refuse here together and none is left waiting.
            if np.asarray(payload).dtype == np.uint8:
                raise ValueError(
                    f"{type(self.compressor).__name__} sends framed byte payloads, which cannot be "
                    f"summed by an allreduce (tensor {name!r}); use communicator='allgather'")
        reduced = []
        for i, payload in enumerate(tensors):
            summed = self.transport.allreduce(payload.copy(), name if i == 0 else f"{name}#{i}")
            reduced.append(self.average(summed))
        return self.decompress(reduced, ctx)
