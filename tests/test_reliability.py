"""Hostile payloads and odd inputs (issue 9): forged Bloom frames decode or are refused
in bounded time, receivers refuse frames of another kind or configuration, codec entry
points refuse arrays of the wrong dtype and sections outside their frame, and every odd
input through the public API has a defined answer."""
import time

import numpy as np
import pytest

from deepreduce import FrameError, IndexCompressor, grace_from_params
from deepreduce._native import ffi, lib, u8
from deepreduce.codecs import Workspace, index_codec, value_codec
from deepreduce.codecs.index import encode_section


def forged_frame(kind, index_codec_id, value_codec_id, numel, count, params, sections):
    """A well-sealed frame (valid CRC) with whatever fields and sections an attacker
    chooses: what reaches the parsing behind the checksum."""
    f = ffi.new("dr_frame *")
    f.kind, f.index_codec, f.value_codec = kind, index_codec_id, value_codec_id
    f.dtype, f.nsections, f.numel, f.count = lib.DR_DTYPE_FLOAT32, len(sections), numel, count
    f.params = params
    for i, section in enumerate(sections):
        f.section_len[i] = len(section)
    size = ffi.new("size_t *")
    assert lib.dr_frame_layout(f, size) == lib.DR_OK
    frame = np.zeros(size[0], dtype=np.uint8)
    for i, section in enumerate(sections):
        frame[f.section_off[i]:f.section_off[i] + len(section)] = np.frombuffer(section, dtype=np.uint8)
    assert lib.dr_frame_seal(f, u8(frame), frame.nbytes, size) == lib.DR_OK
    return frame


def bloom_receiver(d, policy, **extra):
    params = {"compressor": "topk", "compress_ratio": 0.01, "deepreduce": "index", "index": "bloom",
              "policy": policy, **extra}
    w = IndexCompressor(grace_from_params(params).compressor, params)
    _, ctx = w.compress(np.random.default_rng(0).standard_normal(d).astype(np.float32), "w")
    return w, ctx


# ------------------------------------------------------------- item 1: bloom decode cost
@pytest.mark.parametrize("receiver_policy", ["leftmost", "random", "p0", "conflict_sets"])
@pytest.mark.parametrize("frame_policy", ["leftmost", "conflict_sets", "p0"])
def test_all_ones_bloom_frame_on_a_million_elements_is_refused_fast(receiver_policy, frame_policy):
    """Issue 9, item 1: one 0xff byte as the filter (m = 8 bits, k = 64), count d - 1,
    made every position positive and conflict sets ran d rounds of O(d k)."""
    d = 1 << 20
    w, ctx = bloom_receiver(d, receiver_policy)
    packed = 64 | lib.__dict__["DR_BLOOM_" + frame_policy.upper()] << 8
    frame = forged_frame(lib.DR_KIND_TOPK, lib.DR_INDEX_BLOOM, lib.DR_VALUE_RAW, d, d - 1, (8, packed, 0, 0),
                         [b"\xff", b"\x00" * (4 * (d - 1))])
    start = time.process_time()
    with pytest.raises(FrameError, match="bloom index section"):
        w.decompress([frame], ctx)
    assert time.process_time() - start < 0.5


def sized_forgery(d, r, policy, fill):
    """A filter with exactly the receiver's sizing for r of d (so it passes the
    parameter check) whose bytes are ``fill``: the all-ones case the scan must bound."""
    codec = index_codec("bloom", policy=policy)
    k_hash, m_bits = codec.sizing(d, r)
    filt = bytes([fill]) * (m_bits // 8) + (bytes([fill & ((1 << (m_bits % 8)) - 1)]) if m_bits % 8 else b"")
    return codec, k_hash, m_bits, np.frombuffer(filt, dtype=np.uint8).copy()


@pytest.mark.parametrize("policy", ["leftmost", "random", "p0", "conflict_sets"])
def test_a_correctly_sized_all_ones_filter_is_refused_in_linear_time(policy):
    d, r = 1 << 20, 10_000
    codec, k_hash, m_bits, filt = sized_forgery(d, r, policy, 0xFF)
    count = d if policy == "p0" else r
    start = time.process_time()
    with pytest.raises(FrameError, match="bits|positives"):
        codec.decode(filt, 0, filt.nbytes, d, count, (m_bits, k_hash | codec.policy << 8), Workspace(), True)
    assert time.process_time() - start < 0.5


def test_the_policy_and_hash_count_are_the_receivers():
    d = 50_000
    support = np.sort(np.random.default_rng(1).choice(d, 500, replace=False)).astype(np.uint32)
    sender = index_codec("bloom", policy="conflict_sets")
    section, rebuilt = encode_section(sender, support, d)
    k_hash, m_bits = sender.sizing(d, support.size)
    params = (m_bits, k_hash | sender.policy << 8)
    work = Workspace()
    assert np.array_equal(sender.decode(section, 0, section.size, d, 500, params, work, True), rebuilt)
    with pytest.raises(FrameError, match="policy conflict_sets, but this receiver is configured for leftmost"):
        index_codec("bloom", policy="leftmost").decode(section, 0, section.size, d, 500, params, work, True)
    with pytest.raises(FrameError, match="k_hash 11 and m_bits"):
        sender.decode(section, 0, section.size, d, 500, (m_bits, 11 | sender.policy << 8), work, True)
    with pytest.raises(FrameError, match="sizing \\(fpr 0.0001\\)"):
        index_codec("bloom", fpr=1e-4, policy="conflict_sets").decode(section, 0, section.size, d, 500, params,
                                                                      work, True)


@pytest.mark.parametrize("policy", ["leftmost", "random", "p0", "conflict_sets"])
@pytest.mark.parametrize("fpr", [None, 1e-3, 0.3])
def test_honest_frames_still_decode_at_every_density(policy, fpr):
    """The receiver-side bounds refuse no honest filter: many sizes, densities, seeds."""
    rng = np.random.default_rng(7)
    for d in (1, 2, 17, 1000, 40_000):
        for r in {0, 1, min(d, 3), d // 10, d // 2, d}:
            support = np.sort(rng.choice(d, r, replace=False)).astype(np.uint32)
            codec = index_codec("bloom", fpr=fpr, policy=policy)
            section, rebuilt = encode_section(codec, support, d)
            k_hash, m_bits = codec.sizing(d, r)
            got = codec.decode(section, 0, section.size, d, rebuilt.size, (m_bits, k_hash | codec.policy << 8),
                               Workspace(), True)
            assert np.array_equal(got, rebuilt)
            assert np.isin(support, got).all() or policy != "p0"


def test_bloom_on_an_empty_tensor():
    """d = 0 raised ZeroDivisionError in the default sizing."""
    codec = index_codec("bloom")
    section, rebuilt = encode_section(codec, np.empty(0, dtype=np.uint32), 0)
    assert rebuilt.size == 0 and section.size == 0
