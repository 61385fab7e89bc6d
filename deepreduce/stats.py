"""Communication accounting: per tensor name, what was sent and what it cost.

Every communicator records into a ``Stats`` (by default the process-wide ``stats.GLOBAL``),
so a training script or notebook can read the volume sent against the dense volume:

    >>> deepreduce.stats.GLOBAL.totals()["relative_volume"]
"""
import threading
from dataclasses import dataclass, field


@dataclass
class TensorStats:
    calls: int = 0
    bytes_sent: int = 0      # payload bytes this rank handed to the transport
    dense_bytes: int = 0     # what float32 would have taken
    encode_seconds: float = 0.0
    decode_seconds: float = 0.0


@dataclass
class Stats:
    per_name: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, name, *, bytes_sent=0, dense_bytes=0, encode_seconds=0.0, decode_seconds=0.0, calls=1):
        """Add to ``name``'s totals. ``calls=0`` adds without counting a call (a timer
        adding seconds to a step the communicator counts)."""
        with self._lock:
            s = self.per_name.get(name)
            if s is None:
                s = self.per_name[name] = TensorStats()
            s.calls += calls
            s.bytes_sent += int(bytes_sent)
            s.dense_bytes += int(dense_bytes)
            s.encode_seconds += encode_seconds
            s.decode_seconds += decode_seconds

    def __getstate__(self):
        # Pickled and copied without its lock, which does not pickle; a copy makes its own.
        with self._lock:
            return {"per_name": dict(self.per_name)}

    def __setstate__(self, state):
        self.per_name = state["per_name"]
        self._lock = threading.Lock()

    def totals(self):
        """Sums over all names, with the relative volume (bytes sent / dense bytes)."""
        with self._lock:
            rows = list(self.per_name.values())
        sent = sum(r.bytes_sent for r in rows)
        dense = sum(r.dense_bytes for r in rows)
        return {
            "calls": sum(r.calls for r in rows),
            "bytes_sent": sent,
            "dense_bytes": dense,
            "relative_volume": sent / dense if dense else 0.0,
            "encode_seconds": sum(r.encode_seconds for r in rows),
            "decode_seconds": sum(r.decode_seconds for r in rows),
        }

    def reset(self):
        with self._lock:
            self.per_name.clear()


GLOBAL = Stats()
