"""Scratch memory the codecs reuse from call to call."""
import numpy as np


class Workspace:
    """Reusable scratch arrays, one per named slot, grown on demand, so steady-state
    calls allocate nothing new. An array handed out stays valid until the same slot is
    asked for again; one Workspace serves one thread at a time (as a compressor does)."""

    def __init__(self):
        self._slots = {}

    def array(self, slot, n, dtype):
        dtype = np.dtype(dtype)
        nbytes = int(n) * dtype.itemsize
        buf = self._slots.get(slot)
        if buf is None or buf.nbytes < max(nbytes, 1):
            # numpy's allocations are at least 16-byte aligned, as C workspaces need.
            buf = self._slots[slot] = np.empty(max(nbytes, 1), dtype=np.uint8)
        return buf[:nbytes].view(dtype)
