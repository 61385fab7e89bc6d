"""LGC's wire frames: every byte payload LGC sends is one frame of kind DR_KIND_LGC,
built and checked by the C core (``dr_frame_layout`` / ``dr_frame_seal`` /
``dr_frame_parse``), with index sets coded by one of our lossless index codecs.

Frame parameters: params[0] the frame type (below), params[1:4] zero. A worker whose
gradient is not finite sends the project's non-finite marker frame instead
(``dr_frame_nonfinite``: kind LGC, the numel the receiver expects, nothing else).
numel is the length of the vector the index section indexes into; count the number of
indices. Types and their sections:

    SET          the leader's index set S                   [indices]
    VALUES       one worker's values on S (float32)         [values]
    PS_LEAD      S, the order of the leader's values on S
                 (descending), the latent of those values in
                 that order, and their scale (float32)       [indices, order, latent, scale]
    RAR_LEAD     S, the order and the scale                  [indices, order, scale]
    INNOVATION   positions within S (numel = |S|), the
                 worker's values there (float32) and the
                 gain its decoded values are scaled by       [indices, values, gain]

The order is a permutation of |S| entries (``codecs.permutation``: ceil(log2 |S|) bits
each); the autoencoder codes values sorted by the leader's, a smooth curve.
"""
import numpy as np

from .._native import as_frame_bytes, check, ffi, is_nonfinite_frame, lib, nonfinite_frame, parse_frame, u8
from ..codecs import Workspace, permutation
from ..errors import FrameError

SET, VALUES, PS_LEAD, RAR_LEAD, INNOVATION = 1, 2, 3, 4, 5
TYPE_NAMES = {SET: "index set", VALUES: "values", PS_LEAD: "ps leader", RAR_LEAD: "rar leader",
              INNOVATION: "innovation"}
# Sections per frame type: (an index section, an order section after it, the float32
# sections as (name, float count: a number, "count" entries or "latent" floats)).
_LAYOUT = {SET: (True, False, ()), VALUES: (False, False, (("values", "count"),)),
           PS_LEAD: (True, True, (("latent", "latent"), ("scale", 1))), RAR_LEAD: (True, True, (("scale", 1),)),
           INNOVATION: (True, False, (("values", "count"), ("gain", 1)))}


class Parsed:
    """A checked frame: ``nonfinite`` (the sender's gradient was not finite; nothing
    else is set), ``indices`` (uint32, ascending), ``order`` (a permutation of them, or
    None) and the float32 sections by name."""

    def __init__(self, nonfinite, indices=None, order=None, sections=None):
        self.nonfinite = nonfinite
        self.indices, self.order = indices, order
        self.sections = sections or {}


class FrameCodec:
    """Builds and opens LGC frames; ``index`` is the lossless index codec of the sets
    (an object of deepreduce.codecs.index)."""

    def __init__(self, index):
        self.index = index
        self.work = Workspace()

    @staticmethod
    def nonfinite(numel):
        """The frame a worker whose gradient is not finite sends in place of one over
        ``numel`` entries."""
        return nonfinite_frame(lib.DR_KIND_LGC, numel)

    def build(self, frame_type, numel, indices=None, order=None, **floats):
        """A frame of ``frame_type`` over a vector of ``numel`` entries: ``indices`` and
        ``order`` (uint32) where the type has them, and the float32 sections by name."""
        has_index, has_order, layout = _LAYOUT[frame_type]
        sections = [self._index_section(indices, numel)] if has_index else []
        if has_order:
            sections.append(permutation.packed(order, "LGC leader's order"))
        sections += [np.ascontiguousarray(floats[name], dtype=np.float32).view(np.uint8) for name, _ in layout]
        count = indices.size if has_index else floats["values"].size
        return self._seal(frame_type, numel, count, sections)

    def _index_section(self, indices, numel):
        plan = self.index.plan(indices, numel, self.work)
        out = np.empty(max(plan.bound, 1), dtype=np.uint8)
        return out[:plan.write(u8(out), out.nbytes)]

    def _seal(self, frame_type, numel, count, sections):
        f = ffi.new("dr_frame *")
        f.kind, f.value_codec, f.dtype = lib.DR_KIND_LGC, lib.DR_VALUE_RAW, lib.DR_DTYPE_FLOAT32
        f.index_codec = self.index.codec_id if _LAYOUT[frame_type][0] else lib.DR_INDEX_RAW
        f.nsections, f.numel, f.count = len(sections), numel, count
        f.params = (frame_type, 0, 0, 0)
        for i, section in enumerate(sections):
            f.section_len[i] = section.nbytes
        size = ffi.new("size_t *")
        check(lib.dr_frame_layout(f, size), "LGC frame layout")
        frame = np.empty(size[0], dtype=np.uint8)
        for i, section in enumerate(sections):
            frame[f.section_off[i]:f.section_off[i] + section.nbytes] = section
        check(lib.dr_frame_seal(f, u8(frame), frame.nbytes, size), "LGC frame")
        return frame

    def open(self, payload, frame_type, numel, what, count=None, latent=None):
        """Check a received frame against what this rank expects (type, numel, and where
        known the count and latent size) and return it Parsed."""
        buf = as_frame_bytes(payload, what)
        if is_nonfinite_frame(buf, lib.DR_KIND_LGC, numel, what):
            return Parsed(True)
        f = parse_frame(buf, what)
        if f.kind != lib.DR_KIND_LGC or f.params[0] != frame_type:
            raise FrameError(f"{what}: not an LGC {TYPE_NAMES[frame_type]} frame (kind {f.kind}, "
                             f"type {f.params[0]}); a payload of another compressor or stage")
        if f.params[1] or f.params[2] or f.params[3]:
            raise FrameError(f"{what}: unknown parameters {tuple(f.params)}")
        has_index, has_order, layout = _LAYOUT[frame_type]
        if f.numel != numel:
            raise FrameError(f"{what}: frame over {f.numel} entries, expected {numel}")
        if count is not None and f.count != count:
            raise FrameError(f"{what}: {f.count} entries, expected {count}")
        if f.count > numel:
            raise FrameError(f"{what}: {f.count} entries out of {numel}")
        nsections = int(has_index) + int(has_order) + len(layout)
        if f.nsections != nsections:
            raise FrameError(f"{what}: {f.nsections} sections, expected {nsections}")
        expected = (f.index_codec, f.value_codec) == ((self.index.codec_id if has_index else lib.DR_INDEX_RAW),
                                                      lib.DR_VALUE_RAW)
        if not expected:
            raise FrameError(f"{what}: codecs ({f.index_codec}, {f.value_codec}) are not this LGC's")
        indices = None
        if has_index:
            indices = self.index.decode(buf, f.section_off[0], f.section_len[0], numel, f.count, (0, 0),
                                        self.work, ordered=True).copy()
        order = None
        if has_order:
            order = permutation.unpack(buf, f.section_off[1], f.section_len[1], f.count,
                                       np.empty(f.count, dtype=np.uint32), what)
        sizes = {"count": f.count, "latent": latent}
        sections = {}
        for i, (name, size) in enumerate(layout, start=int(has_index) + int(has_order)):
            n = sizes.get(size, size)
            length = int(f.section_len[i])
            if length % 4 or (n is not None and length != 4 * n):
                raise FrameError(f"{what}: {name} section of {length} bytes, expected {4 * n if n else 'whole floats'}")
            values = np.frombuffer(buf, dtype=np.float32, count=length // 4, offset=f.section_off[i]).copy()
            if not np.isfinite(values).all():
                # A non-finite step travels as the marker: an Inf or a NaN here is no encoder's,
                # and a NaN scale or latent poisoned every rank's error feedback for good.
                raise FrameError(f"{what}: its {name} section holds an Inf or a NaN, which no LGC encoder sends")
            sections[name] = values
        return Parsed(False, indices, order, sections)
