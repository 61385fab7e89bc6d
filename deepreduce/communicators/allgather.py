from ..base import Communicator


class Allgather(Communicator):
    """Gather every rank's payload (variable sizes welcome: a real allgatherv, empty
    payloads legal), decompress each with the local ctx, aggregate, average."""

    def send_receive(self, tensors, name, ctx):
        gathered = [self.transport.allgather(payload, name if i == 0 else f"{name}#{i}")
                    for i, payload in enumerate(tensors)]
        return self.decompress_aggregate([list(per_rank) for per_rank in zip(*gathered)], ctx)
