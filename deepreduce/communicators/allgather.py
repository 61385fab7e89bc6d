from .. import edge
from .._native import parse_frame
from ..base import Communicator, decodes_numpy, numpy_payload
from ..errors import CommunicationError, DeepReduceError, FrameError


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
        per_rank = [list(payloads) for payloads in zip(*gathered)]
        try:
            return self.decompress_aggregate(per_rank, ctx)
        except FrameError as error:
            # Every rank refuses the others' frames alike. Where the frames are sound but
            # for tensors of different sizes, the ranks step different tensors under one
            # name (another model, another order): say that, as the allreduce does,
            # rather than blame the frames.
            counts = [_frame_numel(payloads[0]) if payloads else None for payloads in per_rank]
            if len({count for count in counts if count is not None}) > 1:
                raise CommunicationError(f"allgather of tensor {name!r}: element counts differ across ranks "
                                         f"{counts}; every rank must step the same tensors under each name") \
                    from error
            raise


def _as_sent(payload, ctx):
    """The payload as the compressor made it (for decoders written elsewhere)."""
    return payload


def _frame_numel(payload):
    """The element count in the header of ``payload``'s frame, None where it is no sound
    frame (a damaged one, or a payload that is no frame at all)."""
    try:
        array = edge.as_numpy(payload)
        return int(parse_frame(array, "payload").numel) if array.dtype == "uint8" and array.ndim == 1 else None
    except (DeepReduceError, TypeError, ValueError):
        return None
