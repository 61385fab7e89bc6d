"""Exceptions raised by deepreduce. Every message says what was wrong and, where it can,
how to fix it."""


class DeepReduceError(Exception):
    """Base class of deepreduce's own errors."""


class FrameError(DeepReduceError, ValueError):
    """A payload received over the wire is not a valid frame of the expected codec:
    truncated, corrupted in transit (checksum), foreign, or for another tensor."""


class CommunicationError(DeepReduceError, RuntimeError):
    """A collective failed: a peer died, timed out, or ranks disagree on the sequence of
    tensors. The message names the tensor and the rank."""
