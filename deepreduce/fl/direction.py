"""One direction of federated traffic (client-to-server or server-to-client): the params
dict's compressor, error feedback on or off, and the message format of ``wire``.

A direction encodes a model update (an ordered dict of tensors) into one message and
decodes one back. Tensors of more than one dimension go through the params dict's
compressor (any GRACE compressor or DeepReduce wrapper whose payload is one frame);
tensors of one dimension (biases, norms) travel dense, as the paper leaves them, unless
``compress_1d``. Compressor ``none`` sends every tensor dense.

Error feedback is per *owner*: the memory keys each tensor as ``owner/name``, so a client
keeps its own residuals, and the server one per client or one for everyone, depending on
the reading of Algorithm 2 (see ``fedavg``).
"""
import time

import numpy as np
import torch

from .. import edge
from ..base import encode
from ..checks import flag
from ..compressors.none import NoneCompressor
from ..errors import ParameterTypeError
from ..memories.none import NoneMemory
from ..memories.residual import ResidualMemory
from ..wrappers import deepreduce_from_params
from . import wire


class Direction:
    def __init__(self, params, error_feedback=None, compress_1d=False, label="c2s"):
        if not isinstance(params, dict):
            raise ParameterTypeError(f"{label} params must be a dict (a GRACE/DeepReduce params dict), "
                                     f"got {type(params).__name__}")
        self.label = label
        self.params = dict(params)
        communicator = deepreduce_from_params(self.params)
        self.compressor = communicator.compressor
        self.dense = type(self.compressor) is NoneCompressor
        if error_feedback is None:  # the params dict's memory decides (GRACE's default: none)
            self.memory = communicator.memory
        else:
            self.memory = ResidualMemory() if flag(error_feedback, f"{label}_ef") else NoneMemory()
        self.error_feedback = not isinstance(self.memory, NoneMemory)
        self.compress_1d = flag(compress_1d, "compress_1d")
        self._contexts = {}  # tensor name -> the decompress ctx of its shape
        if not self.dense:  # refuse a compressor whose payload cannot travel alone, before any round
            self._one_frame(self.compressor.compress(np.zeros((2, 1024), dtype=np.float32), "probe/format")[0])

    def __repr__(self):
        return f"Direction({self.label}: {self.params}, error feedback {'on' if self.error_feedback else 'off'})"

    def compresses(self, shape):
        return not self.dense and (len(shape) > 1 or self.compress_1d)

    # -- encode -------------------------------------------------------------------------
    def encode(self, update, owner, direction, round_, sender):
        """(message, seconds) for ``update`` (name -> float32 tensor), error feedback
        kept under ``owner``."""
        start = time.perf_counter()
        frames = [self._frame(tensor, f"{owner}/{name}") if self.compresses(tensor.shape)
                  else wire.dense_frame(tensor.detach().reshape(-1).numpy())
                  for name, tensor in update.items()]
        message = wire.pack(frames, direction, round_, sender)
        return message, time.perf_counter() - start

    def _frame(self, tensor, key):
        payload, _ = encode(self.memory, self.compressor, tensor, key)
        return self._one_frame(payload)

    def _one_frame(self, payload):
        frame = edge.as_numpy(payload[0]) if len(payload) == 1 else None
        if frame is None or frame.dtype != np.uint8 or bytes(frame[:4]) != b"DRF1":
            raise ValueError(f"{self.label}: compressor {self.params.get('compressor')!r} does not send one frame "
                             "per tensor (its payload is made to be summed by an allreduce), so it cannot "
                             "travel point-to-point; use a sparsifier, a quantizer or a DeepReduce wrapper")
        return frame

    # -- decode -------------------------------------------------------------------------
    def decode(self, message, shapes, direction, round_):
        """(sender, name -> tensor, seconds) of a received message; ``shapes`` is the
        model's ordered name -> shape."""
        start = time.perf_counter()
        sender, frames = wire.unpack(message, direction, round_, len(shapes))
        out = {}
        for (name, shape), frame in zip(shapes.items(), frames):
            what = f"{self.label} {name!r} (round {round_})"
            if self.compresses(shape):
                decoded = self.compressor.decompress([frame], self._context(name, shape))
                out[name] = torch.as_tensor(edge.as_numpy(decoded)).reshape(shape)
            else:
                out[name] = torch.from_numpy(wire.dense_values(frame, int(np.prod(shape)), what).copy()).reshape(shape)
        return sender, out, time.perf_counter() - start

    def _context(self, name, shape):
        """A receiver's ctx for tensors of ``shape``: decompress needs only the element
        count and the kind to give back, so one dry compress of zeros (under a name no
        sender uses) gives it, once per tensor."""
        if name not in self._contexts:
            payload, ctx = self.compressor.compress(np.zeros(shape, dtype=np.float32), f"receiver-ctx/{name}")
            self._one_frame(payload)
            self._contexts[name] = ctx
        return self._contexts[name]
