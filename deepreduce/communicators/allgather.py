from .. import edge
from ..base import Communicator, decodes_numpy


class Allgather(Communicator):
    """Gather every rank's payload (variable sizes welcome: a real allgatherv, empty
    payloads legal), decompress each with the local ctx, aggregate, average."""

    def send_receive(self, tensors, name, ctx):
        if decodes_numpy(self.compressor):
            # Our own decoders read NumPy: a torch payload crosses once here, and the
            # payloads other ranks sent are not made torch tensors only to be read back.
            tensors = [edge.as_numpy(t) for t in tensors]
        gathered = [self.transport.allgather(payload, name if i == 0 else f"{name}#{i}")
                    for i, payload in enumerate(tensors)]
        return self.decompress_aggregate([list(per_rank) for per_rank in zip(*gathered)], ctx)
