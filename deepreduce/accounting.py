"""Accounting helpers, named as DeepReduce's helper names them (also importable from
``grace_dl.dist.helper``):

- ``tensor_bits(tensor)``: bits a tensor occupies (elements x element size x 8), for a
  NumPy array or a torch tensor of any dtype: a uint8 frame of n bytes is 8 n bits.
- ``volume(tensors)``: total bits of a payload list (what ``compress`` returns), so the
  relative volume of a compressor is ``volume(tensors) / tensor_bits(dense)``. Compressors
  that communicate inside ``compress`` (powersgd, lgc) return an empty payload, whose
  volume is 0: ``volume(tensors, ctx, compressor)`` counts what every compressor puts on
  the wire (its ``wire_bytes``), theirs included.
- ``timer``: wall-clock seconds of a block or of every call of a function::

      with timer() as t:
          tensors, ctx = compressor.compress(grad, name)
      t.seconds

      @timer("fc1.weight", kind="decode")   # each call adds its seconds to stats
      def decode(...): ...

  With a ``name``, the seconds are added to ``deepreduce.stats`` (``stats`` argument,
  default ``stats.GLOBAL``) as that name's encode or decode seconds, without counting a
  call. One timer measures one block at a time (not re-entrant).
"""
import time
from contextlib import ContextDecorator

from . import stats as _stats
from .base import payload_nbytes

__all__ = ["tensor_bits", "volume", "timer"]


def tensor_bits(tensor):
    if not (hasattr(tensor, "nbytes") or hasattr(tensor, "element_size")):
        raise TypeError(f"tensor_bits takes a NumPy array or a torch tensor, got {type(tensor).__name__}")
    return 8 * payload_nbytes(tensor)


def volume(tensors, ctx=None, compressor=None):
    if compressor is None:
        return sum(tensor_bits(t) for t in tensors)
    return 8 * compressor.wire_bytes(tensors, ctx)


class timer(ContextDecorator):
    def __init__(self, name=None, kind="encode", stats=None):
        if kind not in ("encode", "decode"):
            raise ValueError(f"kind must be 'encode' or 'decode', got {kind!r}")
        if stats is not None and not isinstance(stats, _stats.Stats):  # it failed at the block's end
            raise TypeError(f"stats must be a deepreduce.stats.Stats (or None for stats.GLOBAL), got {stats!r}")
        self.name = name
        self.kind = kind
        self.stats = stats
        self.seconds = 0.0
        self._start = None

    def __enter__(self):
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._start
        if self.name is not None:
            target = self.stats if self.stats is not None else _stats.GLOBAL
            target.record(self.name, calls=0, **{f"{self.kind}_seconds": self.seconds})
        return False
