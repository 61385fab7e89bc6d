"""The raw sparse frame shared by the sparsifiers (topk, threshold, dgc): indices and
float32 values in one framed buffer, built and checked by the C core."""
from functools import lru_cache

import numpy as np

from .. import edge
from ..base import Compressor
from ..state import Outputs
from .._native import (all_finite, as_frame_bytes, check, decoded_marker, f32, ffi, lib,
                       nonfinite_frame, u8, u32)


def selected_values(flat, indices):
    """flat[indices] (indices: uint32) as a new float32 array."""
    values = np.empty(indices.size, dtype=np.float32)
    check(lib.dr_gather(f32(flat), flat.size, u32(indices), indices.size, f32(values)), "gather")
    return values


def encode(kind, numel, indices, values, what, frames, name):
    """Frame (indices, values) (uint32, float32) of a tensor of numel entries as a raw
    sparse payload (as index lists, or as a bitmap where more than one entry in 32 is
    sent: the smaller), into a buffer of ``frames`` (an ``Outputs`` of bytes) for
    ``name``, reused once nothing holds it."""
    frame = frames.take(name, lib.dr_sparse_raw_frame_size(numel, indices.size))
    written = ffi.new("size_t *")
    check(lib.dr_sparse_raw_encode(kind, lib.DR_DTYPE_FLOAT32, numel, u32(indices), f32(values),
                                   indices.size, u8(frame), frame.nbytes, written), what)
    return frame


def sent_indices(frame, numel):
    """The ascending uint32 indices a raw sparse frame of a tensor of ``numel`` entries
    (made here: not checked again) sends: a view of its lists, or its bitmap's set
    positions."""
    f = ffi.new("dr_frame *")
    check(lib.dr_frame_parse(u8(frame), frame.nbytes, f), "raw sparse frame")
    start = f.section_off[0]
    if f.params[0] == lib.DR_SPARSE_BITMAP:
        bits = np.unpackbits(frame[start:start + f.section_len[0]], count=numel, bitorder="little")
        return np.flatnonzero(bits).astype(np.uint32)
    return np.frombuffer(frame, np.uint32, f.count, start)


def sum_frames(payloads, kind, numel, what, total, add):
    """Several ranks' sparse payloads summed into ``total`` (flat float32 zeros):
    ``add(frame)`` adds each frame that is not the non-finite marker, in rank order, so
    the bits are those of decoding each and adding them, without a dense tensor per
    rank. NaN everywhere if any is the marker (every other frame is still checked).
    Returns ``(total, finite)``: finite where no frame was the marker and every ``add``
    returned True (the sums it wrote are finite), else False."""
    nonfinite = False
    finite = True
    for payload in payloads:
        frame = as_frame_bytes(payload, what)
        if decoded_marker(frame, kind, numel, what) is not None:
            nonfinite = True
        else:
            finite = add(frame) is True and finite
    if nonfinite:
        total.fill(np.nan)
    return total, finite and not nonfinite


class SparseCtx:
    """What a sparsifier keeps locally: the dense size, the indices it sent (memories such
    as dgc's zero their state there), the way back to the caller's type, and the tensor
    it compressed with its flat view and whether that was finite (``base.crossed``: the
    memory's update reads them instead of crossing the edge and sweeping again), the
    tensor's name (its decoded results come from a pool per name; None: fresh ones),
    ``finite_result`` (``base.vouched_finite``), and ``sent``: ``(payload, array)``, the
    payload handed out and the NumPy array it is a torch tensor of, or None
    (``base.numpy_payload``: the exchange then need not cross it back). ``indices`` None
    (top-k's fused residual step, whose memory needs none): read from ``sent``'s frame
    when asked for."""

    __slots__ = ("numel", "_indices", "restore", "source", "flat", "finite", "name", "finite_result", "sent")

    def __init__(self, numel, indices, restore, source=None, flat=None, finite=None, name=None, sent=None):
        self.numel = numel
        self._indices = indices
        self.restore = restore
        self.source = source
        self.flat = flat
        self.finite = finite
        self.name = name
        self.finite_result = None
        self.sent = sent

    @property
    def indices(self):
        if self._indices is None:
            self._indices = sent_indices(self.sent[1], self.numel)
        return self._indices


@lru_cache(maxsize=None)
def _select_has_values(cls):
    """Whether the class that defines the ``select`` cls uses also defines
    ``select_with_values`` (its one-sweep form)."""
    owner = next(c for c in cls.__mro__ if "select" in vars(c))
    return "select_with_values" in vars(owner)


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
        # The frames sent, likewise; dgc's and threshold's change size from step to step.
        self.frames = Outputs(keep=1, dtype=np.uint8, grow=True)
        # select_with_values' indices (kept by each step's ctx) and values (read by the
        # frame's encode only), for the classes that write them into the caller's arrays.
        self.picked_indices = Outputs(keep=1, dtype=np.uint32)
        self.picked_values = Outputs(keep=1)

    def select(self, flat, name):
        raise NotImplementedError

    def pick(self, flat, name):
        """``(indices, values)``: the entries to send (ascending uint32 indices, their
        float32 values), or None where flat holds an Inf or a NaN. A class may define
        ``select_with_values(flat, name)`` beside its ``select``: the same selection with
        its values, or None, from one sweep in C that also meets any Inf or NaN (topk, dgc,
        threshold). Otherwise, and for a subclass that brings a ``select`` of its own, a
        sweep for Inf/NaN, then ``select`` and a gather."""
        if _select_has_values(type(self)):
            return self.select_with_values(flat, name)
        if not all_finite(flat):
            return None
        indices = self.select(flat, name)
        return indices, selected_values(flat, indices)

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        picked = self.pick(flat, name)
        if picked is None:
            return self.nonfinite_payload(flat.size, restore, name, tensor, flat)
        indices, values = picked
        frame = encode(getattr(lib, self.frame_kind), flat.size, indices, values,
                       f"{type(self).__name__} of {name!r}", self.frames, name)
        payload = restore.wrap(frame)
        return [payload], SparseCtx(flat.size, indices, restore, tensor, flat, True, name, (payload, frame))

    def nonfinite_payload(self, numel, restore, name, tensor=None, flat=None):
        """``(tensors, ctx)`` for a tensor of ``numel`` entries holding an Inf or a NaN:
        the non-finite marker, which selects nothing (``tensor`` and ``flat``: the ctx's
        ``source`` and ``flat``, where known)."""
        frame = nonfinite_frame(getattr(lib, self.frame_kind), numel)
        return [restore.wrap(frame)], \
            SparseCtx(numel, np.empty(0, dtype=np.uint32), restore, tensor, flat, False, name)

    def lost(self, flat, tensors, ctx, out):
        """The entries sent travel exactly: what is lost is flat with them zeroed (in
        place when ``out`` is ``flat``)."""
        if out is not flat:
            out[:] = flat
        check(lib.dr_zero_at(u32(ctx.indices), ctx.indices.size, f32(out), out.size), "residual")

    def decompress(self, tensors, ctx):
        frame, = tensors
        return ctx.restore(self._decode_noting_finite(frame, ctx)[0])

    def _decode_noting_finite(self, payload, ctx):
        """``(dense, finite)``: the float32 tensor one rank's payload describes (zeros
        elsewhere; NaN everywhere for the non-finite marker), in this name's buffer, and
        whether it is finite (told by the decoder from the entries it wrote: no sweep of
        the tensor). One C call."""
        frame = as_frame_bytes(payload, self._payload_name)
        dense, dense_pointer = self.outputs.take_pointed(ctx.name, ctx.numel)
        finite = ffi.new("int *")
        status = lib.dr_sparse_raw_decode_dense(u8(frame), frame.nbytes, getattr(lib, self.frame_kind), dense_pointer,
                                                ctx.numel, finite)
        if status:  # not DR_OK (the message is made only then)
            check(status, self._payload_name())
        return dense, finite[0] == 1

    def decompress_aggregate(self, payloads, ctx, divisor=1):
        """Several ranks' frames are scatter-added into one tensor (one rank's is simply
        decoded), then divided in place: the same bits as decompressing each, summing
        and dividing, without a dense tensor per rank. The decoders say whether what they
        wrote is finite, so the result is vouched for in ``ctx.finite_result`` (dividing
        by a world size keeps a finite sum finite). A subclass that decompresses or
        aggregates its own way gets the default."""
        if not self._sums_as(Sparsifier):
            return super().decompress_aggregate(payloads, ctx, divisor)
        if len(payloads) == 1:
            (frame,), = payloads
            total, finite = self._decode_noting_finite(frame, ctx)
        else:
            kind, what = getattr(lib, self.frame_kind), f"{type(self).__name__} payload"
            total = self.outputs.zeros(ctx.name, ctx.numel)
            written_finite = ffi.new("int *")

            def add(frame):
                check(lib.dr_sparse_raw_decode_add(u8(frame), frame.nbytes, kind, f32(total), ctx.numel,
                                                   written_finite), what)
                return written_finite[0] == 1

            total, finite = sum_frames([frame for frame, in payloads], kind, ctx.numel, what, total, add)
        if divisor != 1:
            np.divide(total, np.float32(divisor), out=total)
        result = ctx.restore(total)
        ctx.finite_result = result if finite else None
        return result
