"""DeepReduce index codecs: how the index set of a sparse tensor travels.

A codec turns the ascending uint32 index set a sparsifier selected into one frame
section and back; every per-element step is a C call. The sending side has two phases:
``plan`` learns the index set the receiver will rebuild (the set itself for a lossless
codec; for bloom, the policy's pick from the filter's positives, computed exactly as the
receiver computes it) and bounds the section; ``IndexPlan.write`` then puts the section
into the frame. Each codec owns two of the frame's four uint32 parameters (params[0:2]).
"""
import math

import numpy as np

from .._native import check, check_frame, ffi, lib, u8, u32
from ..errors import DeepReduceError, FrameError, UnknownNameError
from ..checks import array_of, name as checked_name, number, section
from .workspace import Workspace


class IndexPlan:
    """What the sender learnt: ``indices`` (ascending uint32, the set the receiver will
    rebuild, in that order), ``bound`` (largest section), ``params`` (params[0:2]),
    ``write(ptr, cap) -> bytes written``, and ``sources``: where the sender gathers the
    values the receiver puts on ``indices``, one for one (``indices`` itself but for
    bloom's naive policy, which sends the values of the set it was given)."""

    __slots__ = ("indices", "bound", "params", "write", "sources")

    def __init__(self, indices, bound, params, write, sources=None):
        self.indices = indices
        self.bound = bound
        self.params = params
        self.write = write
        self.sources = indices if sources is None else sources


class IndexCodec:
    """Shared shape: ``plan`` and ``decode`` check their arguments here (the support an
    ascending uint32 array, the section inside the buffer) and hand over to ``_plan`` and
    ``_read``. ``lossless``: the receiver rebuilds the set itself; ``fixed_size``: the
    section size is a function of r alone; ``carries_order``: the section can list the
    indices in any order (so a reordering value codec needs no permutation)."""

    name = None
    codec_id = None
    lossless = True
    fixed_size = False
    carries_order = False

    def plan(self, support, d, work):
        """The IndexPlan of the ascending set ``support`` of a tensor of d entries."""
        return self._plan(array_of(support, np.uint32, f"{self.name} index plan"), d, work)

    def _plan(self, support, d, work):
        raise NotImplementedError

    def decode(self, buf, off, length, d, count, params, work, ordered, **options):
        """The count indices of the section at buf[off:off+length] (a workspace view or a
        view of the frame); ``params`` are the frame's params[0:2]."""
        what = f"{self.name} index section"
        section(buf, off, length, what)
        return self._read(buf, off, length, d, count, params, work, ordered, what, **options)

    def _read(self, buf, off, length, d, count, params, work, ordered, what):
        raise NotImplementedError

    @staticmethod
    def _zero_params(params, what):
        if any(params):
            raise FrameError(f"{what}: codec parameters {tuple(params)} must be zero for this index codec")


# Raw indices in value order carry a sign-in-index value codec's signs as DeepReduce's
# reference (and SPEC §4) folds them: int32 (idx + 1) * sign, so only for d < 2^31.
SIGNED_D_LIMIT = 2 ** 31 - 1


class RawIndex(IndexCodec):
    """uint32 little-endian indices, 4 bytes each. The one index codec that can list the
    indices in any order, so a reordering value codec sends them in its order and no
    permutation travels."""

    name = "raw"
    codec_id = lib.DR_INDEX_RAW
    fixed_size = True
    carries_order = True

    def _plan(self, support, d, work):
        def write(ptr, cap):
            ffi.memmove(ptr, u32(support), 4 * support.size)
            return 4 * support.size
        return IndexPlan(support, 4 * support.size, (0, 0), write)

    @staticmethod
    def fold_signs(indices, signs, section):
        """Write ``indices`` (uint32, value order) into ``section`` (the raw section as
        uint32) as int32 (index + 1) * sign, ``signs`` being 1 where the value is negative."""
        folded = indices.astype(np.int64) + 1
        np.negative(folded, out=folded, where=signs.astype(bool))
        section.view(np.int32)[:] = folded

    def _read(self, buf, off, length, d, count, params, work, ordered, what, signed=False):
        """The indices as a view of the frame. ``ordered``: they must ascend strictly
        (else they are in value order and only need to be distinct). ``signed``: they
        are folded with their values' signs (``fold_signs``); returns (indices, signs)."""
        self._zero_params(params, what)
        if length != 4 * count:
            raise FrameError(f"{what}: {length} bytes for {count} indices, expected {4 * count}")
        idx = np.frombuffer(buf, dtype=np.uint32, count=count, offset=off)
        if signed:
            folded = idx.view(np.int32).astype(np.int64)
            if np.any(folded == 0):
                raise FrameError(f"{what}: a signed index of 0 (they are (index + 1) * sign)")
            signs = work.array("signs", count, bool)
            np.less(folded, 0, out=signs)
            # |INT32_MIN| - 1 = 2^31 - 1 is beyond every tensor this form allows: refused below.
            idx = work.array("indices", count, np.uint32)
            idx[:] = np.abs(folded) - 1
        keys = idx if ordered else np.sort(idx)
        if count > 1 and not np.all(keys[1:] > keys[:-1]):
            raise FrameError(f"{what}: indices {'not strictly ascending' if ordered else 'repeated'}")
        return (idx, signs) if signed else idx


class LosslessIndex(IndexCodec):
    """A lossless set codec of the C core: rle, huffman, ef, rice, varint, skcompress (see
    deepreduce/index.h). The set must ascend, so a reordering value codec sends a
    permutation beside it."""

    def __init__(self, name):
        self.name = name
        self.codec_id = getattr(lib, f"DR_INDEX_{name.upper()}")
        self._bound = getattr(lib, f"dr_index_{name}_bound")
        self._encode = getattr(lib, f"dr_index_{name}_encode")
        self._decode = getattr(lib, f"dr_index_{name}_decode")

    def __reduce__(self):
        # Pickled by name: the C functions it keeps cannot be pickled (a checkpoint of a
        # DeepReduce wrapper holds its codecs).
        return type(self), (self.name,)

    def _plan(self, support, d, work):
        def write(ptr, cap):
            written = ffi.new("size_t *")
            check(self._encode(u32(support), support.size, d, ptr, cap, written), f"{self.name} index encode")
            return written[0]
        return IndexPlan(support, self._bound(d, support.size), (0, 0), write)

    def _read(self, buf, off, length, d, count, params, work, ordered, what):
        self._zero_params(params, what)
        idx = work.array("indices", count, np.uint32)
        check_frame(self._decode(u8(buf) + off, length, d, count, u32(idx)), what)
        return idx


POLICIES = {
    "leftmost": lib.DR_BLOOM_LEFTMOST,
    "random": lib.DR_BLOOM_RANDOM,          # P1
    "p0": lib.DR_BLOOM_P0,
    "conflict_sets": lib.DR_BLOOM_CONFLICT_SETS,  # P2
    "naive": lib.DR_BLOOM_NAIVE,            # BF-Naive (the paper's Figs. 4 and 17)
}


class BloomIndex(IndexCodec):
    """A Bloom filter of the selected set (lossy). The receiver tests every position,
    getting the positives P, and the policy picks the indices both sides use; the
    sender runs the very same two steps on its own filter, so it knows the rebuilt set
    and gathers the values there (false positives carry their true values).

    params[0] = m_bits, params[1] = k_hash | policy << 8. The key of the random and
    conflict_sets policies is ``dr_rng_key(filter bytes, 0)``: a function of the frame
    alone, so every rank rebuilds the same set without a shared counter, and no global
    generator is read or reseeded. p0 keeps all of P, so the frame's count is |P|.
    naive rebuilds leftmost's set but sends the selected set's own values in ascending
    order (the paper's BF-Naive): after a false positive the values shift off their
    indices, the error the other policies exist to avoid.
    """

    name = "bloom"
    codec_id = lib.DR_INDEX_BLOOM
    lossless = False
    carries_order = False

    def __init__(self, fpr=None, policy="leftmost"):
        if checked_name(policy, "policy", POLICIES) not in POLICIES:
            raise UnknownNameError(f"unknown bloom policy {policy!r}; valid policies: {', '.join(POLICIES)}")
        self.fpr = None if fpr is None else number(fpr, "fpr", 0, 1, low_open=True, high_open=True)
        if self.fpr is not None and self.fpr < 2.0 ** -lib.DR_BLOOM_MAX_HASHES:
            raise ValueError(f"fpr must be at least 2^-{lib.DR_BLOOM_MAX_HASHES} (a filter takes ceil(log2(1/fpr)) "
                             f"hashes, {lib.DR_BLOOM_MAX_HASHES} at most), got {fpr!r}")
        self.policy_name = policy
        self.policy = POLICIES[policy]
        # P0's count (and so the value section) follows |P|; the other policies keep r.
        self.fixed_size = self.policy != lib.DR_BLOOM_P0

    def sizing(self, d, r):
        """(k_hash, m_bits) for r of d: at the configured fpr, by default 0.1 r / d."""
        fpr = self.fpr if self.fpr is not None else 0.1 * max(r, 1) / max(d, 1)
        k_hash, m_bits = ffi.new("uint32_t *"), ffi.new("uint32_t *")
        check(lib.dr_bloom_params(r, fpr, k_hash, m_bits), f"bloom sizing for r={r}, d={d}, fpr={fpr}")
        return k_hash[0], m_bits[0]

    def _plan(self, support, d, work):
        k_hash, m_bits = self.sizing(d, support.size)
        filt = np.empty(lib.dr_bloom_size(m_bits), dtype=np.uint8)
        check(lib.dr_bloom_encode(u32(support), support.size, m_bits, k_hash, u8(filt), filt.nbytes), "bloom encode")
        rebuilt = rebuild(filt, 0, filt.nbytes, m_bits, k_hash, self.policy, d, support.size, work, check).copy()

        def write(ptr, cap):
            ffi.memmove(ptr, u8(filt), filt.nbytes)
            return filt.nbytes
        # The naive scheme's values are the true set's, whatever the receiver rebuilds.
        sources = support if self.policy == lib.DR_BLOOM_NAIVE else None
        return IndexPlan(rebuilt, filt.nbytes, (m_bits, k_hash | self.policy << 8), write, sources)

    def _read(self, buf, off, length, d, count, params, work, ordered, what):
        m_bits, packed = params
        k_hash, policy = packed & 0xFF, packed >> 8
        if not 1 <= k_hash <= lib.DR_BLOOM_MAX_HASHES or policy >= lib.DR_BLOOM_POLICY_COUNT_:
            raise FrameError(f"{what}: k_hash {k_hash} or policy {policy} out of range")
        if policy != self.policy:
            raise FrameError(f"{what}: policy {_POLICY_NAMES.get(policy, policy)}, but this receiver is configured "
                             f"for {self.policy_name} (a payload of another configuration)")
        inserted = self._inserted(d, count, k_hash, m_bits, what)
        idx = rebuild(buf, off, length, m_bits, k_hash, policy, d, inserted, work, check_frame)
        if idx.size != count:
            raise FrameError(f"{what}: the filter rebuilds {idx.size} indices but the frame carries {count}")
        return idx

    def _inserted(self, d, count, k_hash, m_bits, what):
        """How many indices the sender put into the filter, by the receiver's own sizing:
        the count itself for every policy but p0 (they rebuild exactly r), for p0 (count
        = |P| >= r) the r whose filter has m_bits bits (m_bits grows strictly with r).
        Refuses a hash count or filter size this receiver's fpr would not give, so the
        decode cost is the receiver's choice, not the payload's."""
        try:
            if self.policy != lib.DR_BLOOM_P0:
                r = count
            else:
                lo, hi = 0, count
                while lo < hi:  # the smallest r <= count whose filter is at least m_bits
                    mid = (lo + hi) // 2
                    lo, hi = (mid + 1, hi) if self.sizing(d, mid)[1] < m_bits else (lo, mid)
                r = lo
            expected = self.sizing(d, r)
        except DeepReduceError as exc:
            raise FrameError(f"{what}: no filter of this receiver's sizing fits {count} of {d} indices ({exc})")
        if expected != (k_hash, m_bits):
            fpr = "0.1 r/d" if self.fpr is None else self.fpr
            raise FrameError(f"{what}: k_hash {k_hash} and m_bits {m_bits}, but this receiver's sizing (fpr {fpr}) "
                             f"gives k_hash {expected[0]} and m_bits {expected[1]} for {r} of {d} indices")
        return r


_POLICY_NAMES = {v: k for k, v in POLICIES.items()}


def rebuild(buf, off, length, m_bits, k_hash, policy, d, r, work, checker):
    """The index set a receiver rebuilds from the filter at buf[off:off+length] that
    holds r indices: the positives P over 0..d-1, then the policy's pick of r (all of P
    for p0), ascending. The result is a workspace view. ``checker`` turns a failed C
    call into the error that fits the caller (a bug when sending, a bad frame when
    receiving). The sender runs this too, so it never sends what a receiver refuses.

    Bounded cost whatever the filter says: leftmost scans only up to the r-th positive;
    the other policies take at most dr_bloom_positives_limit positives (more than an
    honest filter of r indices has) and refuse a filter with more, so the scan, the
    workspace and conflict_sets' rounds stay linear in d and the filter's length.
    (naive scans as leftmost does.)"""
    filt = u8(buf) + off
    limit = ffi.new("size_t *")
    checker(lib.dr_bloom_positives_limit(filt, length, m_bits, k_hash, d, r, limit),
            f"bloom filter of {r} indices ({length} bytes, m_bits {m_bits}, k_hash {k_hash}): wrong length, a set "
            f"padding bit, or more bits set than {r} indices set")
    leftmost = policy in (lib.DR_BLOOM_LEFTMOST, lib.DR_BLOOM_NAIVE)
    cap = r if leftmost else min(limit[0] + 1, d)
    positives = work.array("positives", cap, np.uint32)
    npos = ffi.new("size_t *")
    checker(lib.dr_bloom_positives(filt, length, m_bits, k_hash, d, u32(positives), cap, npos),
            f"bloom positives of {r} indices (a filter whose scan costs more hashes than an honest one)")
    positives = positives[:npos[0]]
    if positives.size < r:
        checker(lib.DR_E_CORRUPT, f"bloom filter of {r} indices with only {positives.size} positives "
                "(a Bloom filter has no false negatives)")
    if positives.size > limit[0]:
        checker(lib.DR_E_CORRUPT, f"bloom filter of {r} indices with over {limit[0]} positives "
                "(more than an honest filter has)")
    scratch = work.array("bloom select", lib.dr_bloom_select_workspace_size(policy, positives.size, m_bits, k_hash),
                         np.uint8)
    out = work.array("rebuilt", positives.size, np.uint32)
    r_out = ffi.new("size_t *")
    key = lib.dr_rng_key(filt, length, 0)
    checker(lib.dr_bloom_select(policy, u32(positives), positives.size, r, m_bits, k_hash, key, u32(out), r_out,
                                ffi.from_buffer(scratch)), "bloom select")
    return out[:r_out[0]]


def encode_section(codec, support, d, work=None):
    """One index section on its own (benchmarks, tests): (section bytes, rebuilt set)."""
    plan = codec.plan(support, d, work if work is not None else Workspace())
    buf = np.empty(plan.bound, dtype=np.uint8)
    return buf[:plan.write(u8(buf), buf.nbytes)], plan.indices


def floor_bits(d, r):
    """log2 C(d, r) / r: the fewest bits per index that can code any r-subset of d."""
    return (math.lgamma(d + 1) - math.lgamma(r + 1) - math.lgamma(d - r + 1)) / math.log(2) / r


_LOSSLESS_NAMES = ("rle", "huffman", "ef", "rice", "varint", "skcompress")
NAMES = ("bloom",) + _LOSSLESS_NAMES + ("raw",)
# DeepReduce's reference names: bloom_cpu (its CPU Bloom filter), rlhff (its run-length
# Huffman: the runs of equal indices are all of length 1, so it is a Huffman code of them).
_ALIASES = {"none": "raw", "bloom_cpu": "bloom", "rlhff": "huffman"}


def index_codec(name, fpr=None, policy="leftmost"):
    """The index codec called ``name`` (``fpr`` and ``policy`` configure bloom)."""
    key = _ALIASES.get(checked_name(name, "index codec", NAMES + tuple(_ALIASES)), name)
    if key == "bloom":
        return BloomIndex(fpr, policy)
    if key == "raw":
        return RawIndex()
    if key in _LOSSLESS_NAMES:
        return LosslessIndex(key)
    raise UnknownNameError(f"unknown index codec {name!r}; valid names: {', '.join(NAMES + tuple(_ALIASES))}")
