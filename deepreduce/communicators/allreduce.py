from ..base import Communicator


class Allreduce(Communicator):
    """Sum every payload tensor across ranks, then decompress once. For compressors whose
    payloads add up elementwise (none, fp16, randomk, powersgd)."""

    def send_receive(self, tensors, name, ctx):
        reduced = []
        for i, payload in enumerate(tensors):
            summed = self.transport.allreduce(payload.copy(), name if i == 0 else f"{name}#{i}")
            reduced.append(self.average(summed))
        return self.decompress(reduced, ctx)
