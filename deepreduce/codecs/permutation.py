"""A permutation of count entries as a frame section: each entry in ceil(log2 count) bits
(``dr_bitpack``), e.g. 414 B for 368 entries where int32 would take 1,472. Used where values
travel in another order than their ascending index set (DeepReduce's reordering value
codecs, LGC's value-sorted sets). A permutation can also carry one bit per entry, the
sign of the value it places (dexp's, whose value section holds magnitudes), as the low bit
of a ceil(log2 count) + 1-bit entry: 460 B for 368 entries."""
import numpy as np

from .._native import check, check_frame, ffi, lib, u32, u8
from ..errors import FrameError


def bits(count, signed=False):
    """Bits per entry of a permutation of ``count`` entries (one more with signs)."""
    return lib.dr_bits_for(max(count, 1) - 1) + int(signed)


def packed_size(count, signed=False):
    """Bytes of the section for ``count`` entries."""
    return lib.dr_bitpack_size(count, bits(count, signed))


def pack(perm, out, capacity, what, signs=None):
    """Write ``perm`` (uint32) at the cffi pointer ``out`` (``capacity`` bytes there);
    returns the bytes written. ``signs`` (uint32 0 or 1 per entry) rides in the low bits."""
    signed = signs is not None
    entries = (perm << 1) | signs if signed else perm
    written = ffi.new("size_t *")
    check(lib.dr_bitpack(u32(entries), perm.size, bits(perm.size, signed), out, capacity, written),
          f"permutation of {what}")
    return written[0]


def packed(perm, what):
    """``perm`` (uint32) as a section of its own (a uint8 array)."""
    out = np.empty(max(packed_size(perm.size), 1), dtype=np.uint8)
    return out[:pack(perm, u8(out), out.nbytes, what)]


def unpack(buf, offset, length, count, out, what, signs=None):
    """Read the section of ``length`` bytes at ``offset`` of ``buf`` into ``out`` (uint32,
    ``count`` entries), checked to be a permutation: the right size, every entry below
    count, none repeated. A corrupt section raises FrameError. With ``signs`` (a bool
    array of count entries) the entries carry sign bits, written there."""
    signed = signs is not None
    if length != packed_size(count, signed):
        raise FrameError(f"{what}: permutation section of {length} bytes, expected "
                         f"{packed_size(count, signed)} for {count} entries of {bits(count, signed)} bits")
    check_frame(lib.dr_bitunpack(u8(buf) + offset, length, count, bits(count, signed), u32(out)), what)
    if signed:
        np.not_equal(out & 1, 0, out=signs)
        out >>= 1
    if lib.dr_permutation_check(u32(out), count) != lib.DR_OK:
        raise FrameError(f"{what}: the permutation section is no permutation of {count} entries: "
                         f"{_first_bad_entry(out, count)}")
    return out


def _first_bad_entry(perm, count):
    """What is wrong with the refused ``perm``: its first entry out of range, else the
    smallest value that repeats, with both positions. Cold path:
    dr_permutation_check leaves perm as it arrived, so it can be read again here."""
    wide = np.flatnonzero(perm >= count)
    if wide.size:
        return f"entry {int(perm[wide[0]])} at position {int(wide[0])} is out of range for {count} entries"
    # Sorted stably, a repeated value's second occurrence follows its first.
    order = np.argsort(perm, kind="stable")
    later = np.flatnonzero(perm[order[1:]] == perm[order[:-1]])
    first, again = sorted(int(order[i]) for i in (later[0], later[0] + 1))
    return f"entry {int(perm[first])} repeats at positions {first} and {again}"
