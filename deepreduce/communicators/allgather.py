from ..base import Communicator, decodes_numpy, numpy_payload


class Allgather(Communicator):
    """Gather every rank's payload (variable sizes welcome: a real allgatherv, empty
    payloads legal), decompress each with the local ctx, aggregate, average."""

    def send_receive(self, tensors, name, ctx):
        # Our own decoders read NumPy: a torch payload crosses once here (or not at all,
        # where the ctx keeps the array it was made of), and the payloads other ranks sent
        # are not made torch tensors only to be read back. Decoders written elsewhere get
        # the payload's kind.
        crossing = numpy_payload if decodes_numpy(self.compressor) else _as_sent
        gathered = [self.transport.allgather(crossing(payload, ctx), name if i == 0 else f"{name}#{i}")
                    for i, payload in enumerate(tensors)]
        return self.decompress_aggregate([list(per_rank) for per_rank in zip(*gathered)], ctx,
                                         f"allgather of tensor {name!r}")


def _as_sent(payload, ctx):
    """The payload as the compressor made it (for decoders written elsewhere)."""
    return payload
