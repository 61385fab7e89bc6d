"""Exceptions raised by deepreduce. Every message says what was wrong and, where it can,
how to fix it."""


class DeepReduceError(Exception):
    """Base class of deepreduce's own errors."""


class FrameError(DeepReduceError, ValueError):
    """A payload received over the wire is not a valid frame of the expected codec:
    truncated, corrupted in transit (checksum), foreign, or for another tensor."""


class ParameterTypeError(DeepReduceError, TypeError):
    """A parameter (a params key, a constructor's argument) of the wrong type: a string
    where a number or True/False belongs, a list where a params dict does. The message
    names the parameter and what it takes. A TypeError, as Python's own for a wrong type,
    and a DeepReduceError, so the command lines tell it from a bug's TypeError."""


class CommunicationError(DeepReduceError, RuntimeError):
    """A collective failed: a peer died, timed out, or ranks disagree on the sequence of
    tensors. The message names the tensor and the rank."""


class UnknownNameError(DeepReduceError, NotImplementedError, ValueError):
    """A params dict names a compressor, memory or communicator that does not exist. It
    is a NotImplementedError, as GRACE's helper raised, and a ValueError; the message
    lists the valid names."""
