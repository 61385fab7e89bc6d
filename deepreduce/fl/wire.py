"""What travels between the federated server and a client: one *message* per model update,
holding one frame per tensor.

Compressed tensors travel in their compressor's own frame (docs/architecture.md); a tensor
sent dense (the baseline, and tensors of one dimension, which the paper never sparsifies)
travels in a *dense frame*: the common frame with kind none, raw codecs, one section of
numel float32 values. The message wraps the frames in an envelope:

| offset | size | field |
|---:|---:|---|
| 0 | 4 | magic `DRFL` |
| 4 | 1 | version (1) |
| 5 | 1 | direction: 0 client-to-server, 1 server-to-client |
| 6 | 2 | reserved, zero |
| 8 | 4 | round |
| 12 | 4 | sender: the client's id, or 0xFFFFFFFF for the server |
| 16 | 4 | number of frames n |
| 20 | 8·n | frame lengths |
| … | 4 | CRC32 of the envelope before it |
| … | … | the frames, back to back (each with its own CRC32) |

A receiver refuses (``FrameError``, saying what is wrong) an envelope that is short, foreign,
of another version or direction, of another round, with a frame count other than its
model's, with lengths that do not add up to the message, or with a bad CRC; then each frame
is checked by its decoder.
"""
import struct
import zlib

import numpy as np

from .._native import check, ffi, lib, parse_frame, u8
from ..errors import FrameError

MAGIC = b"DRFL"
VERSION = 1
C2S, S2C = 0, 1
SERVER = 0xFFFFFFFF
_HEAD = struct.Struct("<4sBBHIII")
_DIRECTIONS = {C2S: "client-to-server", S2C: "server-to-client"}


def pack(frames, direction, round_, sender):
    """One message (a uint8 array) from a list of frames (uint8 arrays)."""
    lengths = [int(f.nbytes) for f in frames]
    head = _HEAD.pack(MAGIC, VERSION, direction, 0, round_, sender, len(frames))
    head += struct.pack(f"<{len(frames)}Q", *lengths)
    head += struct.pack("<I", zlib.crc32(head))
    out = np.empty(len(head) + sum(lengths), dtype=np.uint8)
    out[:len(head)] = np.frombuffer(head, dtype=np.uint8)
    offset = len(head)
    for frame, n in zip(frames, lengths):
        out[offset:offset + n] = np.asarray(frame, dtype=np.uint8).reshape(-1)
        offset += n
    return out


def unpack(message, direction, round_, count):
    """(sender, list of frames) of a received message, each frame a view into it; the
    envelope is checked against what the receiver expects (direction, round, count)."""
    buf = np.ascontiguousarray(np.asarray(message, dtype=np.uint8).reshape(-1))
    what = f"{_DIRECTIONS.get(direction, direction)} message of round {round_}"
    if buf.nbytes < _HEAD.size + 4:
        raise FrameError(f"{what}: {buf.nbytes} bytes, shorter than an envelope")
    magic, version, got_direction, reserved, got_round, sender, n = _HEAD.unpack_from(buf)
    if magic != MAGIC:
        raise FrameError(f"{what}: not a federated message (magic {magic!r}, expected {MAGIC!r})")
    if version != VERSION or reserved != 0:
        raise FrameError(f"{what}: envelope version {version} (reserved {reserved}); this reader speaks {VERSION}")
    head_len = _HEAD.size + 8 * n + 4
    if buf.nbytes < head_len:
        raise FrameError(f"{what}: {buf.nbytes} bytes, shorter than its envelope of {n} frames")
    (crc,) = struct.unpack_from("<I", buf, head_len - 4)
    if zlib.crc32(buf[:head_len - 4]) != crc:
        raise FrameError(f"{what}: envelope checksum mismatch (corrupted in transit)")
    if got_direction != direction or got_round != round_:
        raise FrameError(f"{what}: the envelope says {_DIRECTIONS.get(got_direction, got_direction)} "
                         f"of round {got_round}")
    if n != count:
        raise FrameError(f"{what}: {n} frames, the model has {count} tensors")
    lengths = struct.unpack_from(f"<{n}Q", buf, _HEAD.size)
    if head_len + sum(lengths) != buf.nbytes:
        raise FrameError(f"{what}: frame lengths add up to {sum(lengths)} bytes, the message carries "
                         f"{buf.nbytes - head_len}")
    frames, offset = [], head_len
    for length in lengths:
        frames.append(buf[offset:offset + length])
        offset += length
    return sender, frames


def dense_frame(flat):
    """The dense frame of a flat float32 array."""
    d = flat.size
    f = ffi.new("dr_frame *")
    f.kind, f.index_codec, f.value_codec = lib.DR_KIND_NONE, lib.DR_INDEX_RAW, lib.DR_VALUE_RAW
    f.dtype, f.nsections, f.numel, f.count = lib.DR_DTYPE_FLOAT32, 1, d, d
    f.section_len[0] = 4 * d
    size = ffi.new("size_t *")
    check(lib.dr_frame_layout(f, size), "dense frame")
    frame = np.empty(size[0], dtype=np.uint8)
    start = f.section_off[0]
    frame[start:start + 4 * d] = np.ascontiguousarray(flat, dtype=np.float32).view(np.uint8)
    check(lib.dr_frame_seal(f, u8(frame), frame.nbytes, size), "dense frame")
    return frame


def dense_values(frame, numel, what):
    """The float32 values of a received dense frame of ``numel`` entries (a view)."""
    f = parse_frame(frame, what)
    fields = (f.kind, f.index_codec, f.value_codec, f.nsections, f.flags)
    if fields != (lib.DR_KIND_NONE, lib.DR_INDEX_RAW, lib.DR_VALUE_RAW, 1, 0) or any(f.params):
        raise FrameError(f"{what}: not a dense frame (kind {f.kind}, codecs {f.index_codec}/{f.value_codec}, "
                         f"{f.nsections} sections, flags {f.flags})")
    if f.numel != numel or f.count != numel or f.section_len[0] != 4 * numel:
        raise FrameError(f"{what}: a dense frame of {f.numel} entries, this tensor has {numel}")
    start = f.section_off[0]
    return frame[start:start + 4 * numel].view(np.float32)
