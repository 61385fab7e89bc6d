"""The raw sparse frame shared by the sparsifiers (topk, threshold, dgc): indices and
float32 values in one framed buffer, built and checked by the C core."""
import numpy as np

from .. import edge
from ..base import Compressor
from ..state import Outputs
from .._native import (all_finite, as_frame_bytes, check, decoded_marker, f32, ffi, lib,
                       nonfinite_frame, u8, u32)


def _gather(flat, indices, index_pointer):
    """flat[indices] as a new float32 array and a pointer to it."""
    values = np.empty(indices.size, dtype=np.float32)
    value_pointer = f32(values)
    check(lib.dr_gather(f32(flat), flat.size, index_pointer, indices.size, value_pointer), "gather")
    return values, value_pointer


def selected_values(flat, indices):
    return _gather(flat, indices, u32(indices))[0]


def encode(kind, flat, indices, what):
    """Frame flat[indices] (indices: uint32) as a raw sparse payload."""
    index_pointer = u32(indices)  # made once for both calls
    values, value_pointer = _gather(flat, indices, index_pointer)
    frame = np.empty(lib.dr_sparse_raw_size(indices.size), dtype=np.uint8)
    written = ffi.new("size_t *")
    check(lib.dr_sparse_raw_encode(kind, lib.DR_DTYPE_FLOAT32, flat.size, index_pointer, value_pointer,
                                   indices.size, u8(frame), frame.nbytes, written), what)
    return frame


def decode(kind, payload, numel, what, dense):
    """The dense float32 tensor a raw sparse payload describes (zeros elsewhere; NaN
    everywhere for the non-finite marker), written into ``dense`` (flat float32 of
    numel zeros) unless it is the marker."""
    frame = as_frame_bytes(payload, what)
    marker = decoded_marker(frame, kind, numel, what)
    if marker is not None:
        return marker
    check(lib.dr_sparse_raw_decode(u8(frame), frame.nbytes, kind, f32(dense), numel), what)
    return dense


def sum_frames(payloads, kind, numel, what, total, add):
    """Several ranks' sparse payloads summed into ``total`` (flat float32 zeros):
    ``add(frame)`` adds each frame that is not the non-finite marker, in rank order, so
    the bits are those of decoding each and adding them, without a dense tensor per
    rank. NaN everywhere if any is the marker (every other frame is still checked)."""
    nonfinite = False
    for payload in payloads:
        frame = as_frame_bytes(payload, what)
        if decoded_marker(frame, kind, numel, what) is not None:
            nonfinite = True
        else:
            add(frame)
    if nonfinite:
        total.fill(np.nan)
    return total


class SparseCtx:
    """What a sparsifier keeps locally: the dense size, the indices it sent (memories such
    as dgc's zero their state there), the way back to the caller's type, and the tensor
    it compressed with its flat view and whether that was finite (``base.crossed``: the
    memory's update reads them instead of crossing the edge and sweeping again), and the
    tensor's name (its decoded results come from a pool per name; None: fresh ones)."""

    __slots__ = ("numel", "indices", "restore", "source", "flat", "finite", "name")

    def __init__(self, numel, indices, restore, source=None, flat=None, finite=None, name=None):
        self.numel = numel
        self.indices = indices
        self.restore = restore
        self.source = source
        self.flat = flat
        self.finite = finite
        self.name = name


class Sparsifier(Compressor):
    """Base of the compressors that send a subset of entries (topk, threshold, dgc): a
    subclass picks ascending uint32 indices in ``select``; the frame, the ctx and
    decompression are shared. ``frame_kind`` names the enum dr_kind in the frame. A
    tensor holding a NaN or an infinity selects nothing: its non-finite marker travels
    (NaN on every rank), instead of a selection that would silently drop the NaN."""

    frame_kind = None
    lost_in_place = True  # the frame is a copy of the sent entries; lost only zeroes them

    def __init__(self, average=True, tensors_size_are_same=True):
        super().__init__(average, tensors_size_are_same)
        self.outputs = Outputs()  # decompressed results, reused per name once released

    def select(self, flat, name):
        raise NotImplementedError

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        kind = getattr(lib, self.frame_kind)
        finite = all_finite(flat)
        if finite:
            indices = self.select(flat, name)
            frame = encode(kind, flat, indices, f"{type(self).__name__} of {name!r}")
        else:
            indices, frame = np.empty(0, dtype=np.uint32), nonfinite_frame(kind, flat.size)
        return [restore.wrap(frame)], SparseCtx(flat.size, indices, restore, tensor, flat, finite, name)

    def lost(self, flat, tensors, ctx, out):
        """The entries sent travel exactly: what is lost is flat with them zeroed (in
        place when ``out`` is ``flat``)."""
        if out is not flat:
            out[:] = flat
        check(lib.dr_zero_at(u32(ctx.indices), ctx.indices.size, f32(out), out.size), "residual")

    def decompress(self, tensors, ctx):
        frame, = tensors
        return ctx.restore(decode(getattr(lib, self.frame_kind), frame, ctx.numel, f"{type(self).__name__} payload",
                                  self.outputs.zeros(ctx.name, ctx.numel)))

    def decompress_aggregate(self, payloads, ctx, divisor=1):
        """Several ranks' frames are scatter-added into one tensor (one rank's is simply
        decoded), then divided in place: the same bits as decompressing each, summing
        and dividing, without a dense tensor per rank. A subclass that decompresses or
        aggregates its own way gets the default."""
        if len(payloads) == 1 or not self._sums_as(Sparsifier):
            return super().decompress_aggregate(payloads, ctx, divisor)
        kind, what = getattr(lib, self.frame_kind), f"{type(self).__name__} payload"
        summed = self.outputs.zeros(ctx.name, ctx.numel)

        def add(frame):
            check(lib.dr_sparse_raw_decode_add(u8(frame), frame.nbytes, kind, f32(summed), ctx.numel), what)

        sum_frames([frame for frame, in payloads], kind, ctx.numel, what, summed, add)
        if divisor != 1:
            np.divide(summed, np.float32(divisor), out=summed)
        return ctx.restore(summed)
