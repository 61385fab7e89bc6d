"""The raw sparse frame shared by the sparsifiers (topk, threshold, dgc): indices and
float32 values in one framed buffer, built and checked by the C core."""
import numpy as np

from .. import edge
from .._native import as_frame_bytes, check, f32, ffi, lib, u8, u32


def selected_values(flat, indices):
    values = np.empty(indices.size, dtype=np.float32)
    check(lib.dr_gather(f32(flat), flat.size, u32(indices), indices.size, f32(values)), "gather")
    return values


def encode(kind, flat, indices, what):
    """Frame flat[indices] (indices: uint32) as a raw sparse payload."""
    values = selected_values(flat, indices)
    frame = np.empty(lib.dr_sparse_raw_size(indices.size), dtype=np.uint8)
    written = ffi.new("size_t *")
    check(lib.dr_sparse_raw_encode(kind, lib.DR_DTYPE_FLOAT32, flat.size, u32(indices), f32(values),
                                   indices.size, u8(frame), frame.nbytes, written), what)
    return frame


def decode(payload, numel, what):
    """The dense float32 tensor a raw sparse payload describes (zeros elsewhere)."""
    frame = as_frame_bytes(payload, what)
    dense = edge.zeros(numel)
    check(lib.dr_sparse_raw_decode(u8(frame), frame.nbytes, f32(dense), numel, ffi.NULL), what)
    return dense


class SparseCtx:
    """What a sparsifier keeps locally: the dense size, the indices it sent (memories such
    as dgc's zero their state there), and the way back to the caller's type."""

    __slots__ = ("numel", "indices", "restore")

    def __init__(self, numel, indices, restore):
        self.numel = numel
        self.indices = indices
        self.restore = restore
