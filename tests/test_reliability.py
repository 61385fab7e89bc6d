"""Hostile payloads and odd inputs (issue 9): forged Bloom frames decode or are refused
in bounded time, receivers refuse frames of another kind or configuration, codec entry
points refuse arrays of the wrong dtype and sections outside their frame, and every odd
input through the public API has a defined answer."""
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from deepreduce import FrameError, IndexCompressor, ParameterTypeError, grace_from_params
from deepreduce._native import ffi, lib, u8
from deepreduce.codecs import Workspace, index_codec, value_codec
from deepreduce.codecs.index import encode_section
from deepreduce.pairings import PAIRINGS, natural_params
from deepreduce.wrappers import deepreduce_from_params


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


# ------------------------------------------------------------- item 2: randomk payloads
def test_randomk_refuses_a_payload_of_the_wrong_length():
    """k + 10^8 values segfaulted: the scatter ran over the k indices of ctx."""
    c = grace_from_params({"compressor": "randomk", "compress_ratio": 0.01}).compressor
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    (values,), ctx = c.compress(x, "w")
    for bad in (np.zeros(values.size + 10 ** 6, np.float32), values[:-1], values.astype(np.int32),
                values.reshape(1, -1)):
        with pytest.raises(FrameError, match="random-k payload"):
            c.decompress([bad], ctx)
    assert np.array_equal(c.decompress([values], ctx)[ctx.indices], values)


# ------------------------------------------------------------- item 3: sparse receivers
def sparse_payload(name, x, **params):
    c = grace_from_params({"compressor": name, **params}).compressor
    return c, *c.compress(x, "w")


def test_sparse_receivers_refuse_another_kind_and_repeated_or_unsorted_indices():
    x = np.random.default_rng(2).standard_normal(5000).astype(np.float32)
    topk, (frame,), ctx = sparse_payload("topk", x, compress_ratio=0.01)
    threshold, (other,), _ = sparse_payload("threshold", x, threshold=2.5)
    with pytest.raises(FrameError, match="codec"):
        topk.decompress([other], ctx)
    with pytest.raises(FrameError, match="codec"):
        threshold.decompress([frame], ctx)
    header = int(lib.dr_frame_header_size(2))
    idx = frame[header:header + 4 * 50].view(np.uint32).copy()
    values = frame[header + 4 * 50:-4].tobytes()
    for forged in (np.r_[idx[:2], idx[1], idx[3:]], idx[::-1].copy(), np.r_[idx[:-1], 5000]):
        bad = forged_frame(lib.DR_KIND_TOPK, lib.DR_INDEX_RAW, lib.DR_VALUE_RAW, 5000, 50, (0, 0, 0, 0),
                           [forged.astype(np.uint32).tobytes(), values])
        with pytest.raises(FrameError, match="corrupt"):
            topk.decompress([bad], ctx)
    nonzero = forged_frame(lib.DR_KIND_TOPK, lib.DR_INDEX_RAW, lib.DR_VALUE_RAW, 5000, 50, (0, 1, 0, 0),
                           [idx.tobytes(), values])
    with pytest.raises(FrameError, match="field"):
        topk.decompress([nonzero], ctx)
    # NaN and Inf values pass through the raw value section untouched (SPEC §2).
    odd = np.frombuffer(values, dtype=np.float32).copy()
    odd[:2] = [np.nan, np.inf]
    out = topk.decompress([forged_frame(lib.DR_KIND_TOPK, lib.DR_INDEX_RAW, lib.DR_VALUE_RAW, 5000, 50,
                                        (0, 0, 0, 0), [idx.tobytes(), odd.tobytes()])], ctx)
    assert np.isnan(out[idx[0]]) and np.isinf(out[idx[1]])


def test_inceptionn_refuses_the_layout_before_blocks_as_a_format_version_and_header_damage_as_transit():
    """Review of issue 12 (I1, I2): a frame from a build before the blocked layout (4
    sections, params[1] = 0), or with another block size, names the format version; a
    header field damaged on the wire (not resealed) names the checksum, as for every codec."""
    n = 3000
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    c = grace_from_params({"compressor": "inceptionn"}).compressor
    (frame,), ctx = c.compress(x, "w")
    old = forged_frame(lib.DR_KIND_INCEPTIONN, lib.DR_INDEX_RAW, lib.DR_VALUE_RAW, n, n, (10, 0, 0, 0),
                       [bytes((n + 3) // 4), b"", b"", b""])
    with pytest.raises(FrameError, match="InceptionnCompressor payload: unsupported frame format version"):
        c.decompress([old], ctx)
    other_block = frame.copy()
    other_block[16:20] = np.frombuffer(np.uint32(2 * lib.DR_INCEPTIONN_BLOCK).tobytes(), dtype=np.uint8)
    other_block[-4:] = np.frombuffer(np.uint32(lib.dr_crc32(0, u8(other_block), frame.size - 4)).tobytes(),
                                     dtype=np.uint8)
    with pytest.raises(FrameError, match="unsupported frame format version"):
        c.decompress([other_block], ctx)
    for field_at in (5, 12, 16, 28, 36):  # kind, params[0], params[1], numel, count
        damaged = frame.copy()
        damaged[field_at] ^= 1
        with pytest.raises(FrameError, match="checksum mismatch"):
            c.decompress([damaged], ctx)
    np.testing.assert_allclose(c.decompress([frame], ctx), x, atol=2.0 ** -10)


# ------------------------------------------------------------- item 4: the codec layer
def test_codecs_refuse_arrays_of_the_wrong_dtype():
    work = Workspace()
    for name in ("bloom", "ef", "rice", "raw"):
        with pytest.raises(TypeError, match="uint32"):
            index_codec(name).plan(np.arange(10, dtype=np.float32), 100, work)
        with pytest.raises(TypeError, match="uint32"):
            index_codec(name).plan(np.arange(10, dtype=np.int64), 100, work)
    buf = np.zeros(64, dtype=np.uint8)
    for name in ("fp16", "bf16", "qsgd", "polyfit", "dexp", "deflate", "raw"):
        with pytest.raises(TypeError, match="float32"):
            value_codec(name).encode(np.ones(8, dtype=np.float64), u8(buf), buf.nbytes, "w", work)


@pytest.mark.parametrize("off, length", [(2 ** 30, 4), (0, 2 ** 30), (-1, 4), (60, 8)])
def test_codec_decoders_refuse_a_section_outside_the_frame(off, length):
    buf = np.zeros(64, dtype=np.uint8)
    work = Workspace()
    for name in ("rle", "huffman", "ef", "rice", "varint", "raw", "bloom"):
        with pytest.raises(FrameError, match="outside the 64-byte frame"):
            index_codec(name).decode(buf, off, length, 1000, 1, (0, 0), work, True)
    for name in ("fp16", "bf16", "qsgd", "polyfit", "dexp", "deflate", "raw"):
        with pytest.raises(FrameError, match="outside the 64-byte frame"):
            value_codec(name).decode(buf, off, length, 1, (0, 0), work)
    with pytest.raises(TypeError, match="uint8"):
        index_codec("ef").decode(buf.view(np.int8), 0, 4, 1000, 1, (0, 0), work, True)


# ------------------------------------------------------------- item 5: odd inputs
def every_compressor_config():
    """(params) for every compressor, plain and under each DeepReduce wrapper."""
    for name in sorted(PAIRINGS):
        yield natural_params(name)
        if name != "powersgd":  # powersgd communicates inside compress: nothing to wrap
            for mode, index, value in (("index", "bloom", "raw"), ("value", "raw", "polyfit"),
                                       ("both", "ef", "qsgd")):
                yield {**natural_params(name), "deepreduce": mode, "index": index, "value": value, "min_numel": 0}


def compressor_of(params):
    return deepreduce_from_params(params).compressor


@pytest.mark.parametrize("params", list(every_compressor_config()), ids=lambda p: f"{p['compressor']}"
                         f"-{p.get('deepreduce', 'plain')}")
def test_empty_and_near_float_max_tensors_through_every_compressor(params):
    """An empty tensor gave "invalid argument" in topk, randomk and dgc; finite values near
    ±3e38 made qsgd's bucket norm overflow. Both now round-trip (fp16 excepted for the
    huge values: they are beyond float16, see the fp16 test)."""
    c = compressor_of(params)
    empty = np.zeros((0, 3), dtype=np.float32)
    tensors, ctx = c.compress(empty, "empty")
    assert c.decompress(tensors, ctx).shape == (0, 3)
    if params["compressor"] == "fp16":
        return
    huge = np.where(np.arange(600) % 2, 3e38, -3.2e38).astype(np.float32)
    tensors, ctx = c.compress(huge, "huge")  # another name: signum's momentum is kept per name and size
    out = np.asarray(c.decompress(tensors, ctx))
    assert out.shape == huge.shape and np.isfinite(out).all()


@pytest.mark.parametrize("name", sorted(PAIRINGS))
def test_strided_and_expanded_torch_tensors_step_as_their_contiguous_copies(name):
    """A 1-D tensor that is a strided view (``w[::2]``) or an expansion (``expand``) is flat
    already, so its reshape kept its strides, and every compressor refused it with NumPy's
    "ndarray is not C-contiguous". Each now steps as its contiguous copy does, with its
    memory: the same bits, in the caller's shape."""
    torch = pytest.importorskip("torch")
    views = {"every other entry": lambda t: t[::2], "expanded": lambda t: t[:1].expand(t.numel() // 2)}
    for view in views.values():
        params = {**natural_params(name), "world_size": 1, "transport": "local"}
        strided, contiguous = grace_from_params(dict(params)), grace_from_params(dict(params))
        for step in range(3):
            x = view(torch.randn(1200, generator=torch.Generator().manual_seed(step)))
            got, want = strided.step(x, "w"), contiguous.step(x.contiguous(), "w")
            assert got.shape == x.shape and torch.equal(got, want), step


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_sparse_and_meta_tensors_are_refused_with_what_to_do():
    torch = pytest.importorskip("torch")
    grc = grace_from_params({"compressor": "topk", "memory": "residual", "world_size": 1, "transport": "local"})
    dense = torch.randn(8, 8)
    for sparse in (dense.to_sparse(), dense.to_sparse_csr()):
        with pytest.raises(TypeError, match=r"gradient 'emb': expected a dense tensor, got layout torch.sparse_\w+; "
                                            r"pass tensor.to_dense\(\)"):
            grc.step(sparse, "emb")
    with pytest.raises(ValueError, match="gradient 'w': a tensor on the meta device holds no values"):
        grc.step(torch.empty(8, device="meta"), "w")


def test_qsgd_near_float_max_stays_unbiased():
    c = grace_from_params({"compressor": "qsgd", "quantum_num": 64, "bucket_size": 16}).compressor
    x = np.full(16, 3e38, dtype=np.float32)
    outs = [np.asarray(c.decompress(*c.compress(x, "w"))) for _ in range(400)]
    mean = np.mean(outs, axis=0, dtype=np.float64)
    assert np.all(np.abs(mean / 3e38 - 1) < 0.05)


@pytest.mark.parametrize("name, key, bad, error, match", [
    ("topk", "compress_ratio", "0.1", TypeError, "compress_ratio must be a number, got '0.1'"),
    ("topk", "compress_ratio", None, TypeError, "compress_ratio must be a number, got None"),
    ("randomk", "compress_ratio", 0, ValueError, r"compress_ratio must be in \(0, 1\]"),
    ("dgc", "compress_ratio", True, TypeError, "compress_ratio must be a number"),
    ("adaq", "compress_ratio", 1.5, ValueError, r"compress_ratio must be in \(0, 1\]"),
    ("qsgd", "quantum_num", 1.5, ValueError, "quantum_num must be an integer, got 1.5"),
    ("qsgd", "bucket_size", 2 ** 40, ValueError, r"bucket_size must be an integer in \[1, 4294967295\]"),
    ("sketch", "quantum_num", "7", TypeError, "quantum_num \\(bins\\) must be a number"),
    ("signum", "momentum", 1.5, ValueError, r"momentum must be in \[0.0, 1.0\]"),
    ("signum", "momentum", "0.9", TypeError, "momentum must be a number"),
    ("threshold", "threshold", -1, ValueError, "threshold must be a finite number >= 0.0, got -1"),
    ("efsignsgd", "lr", 0, ValueError, "lr must be a finite number > 0.0, got 0"),
    ("efsignsgd", "lr", float("inf"), ValueError, "lr must be a finite number > 0.0, got inf"),
    ("powersgd", "compress_rank", 0.5, ValueError, "compress_rank must be an integer"),
    # float() took the string and the bool; None failed as a bare TypeError naming no key.
    ("3lc", "threelc_sparsity", "1.5", TypeError, "threelc_sparsity must be a number, got '1.5'"),
    ("3lc", "threelc_sparsity", True, TypeError, "threelc_sparsity must be a number, got True"),
    ("3lc", "threelc_sparsity", 2.0, ValueError, r"threelc_sparsity must be in \[1.0, 2.0\), got 2.0"),
    ("sketch", "quantiles", "16", TypeError, "quantiles must be a number, got '16'"),
    ("inceptionn", "error_bound", 1.0, ValueError, r"error_bound must be in \[0.0, 0.2\], got 1.0"),
    # P and Q are all-reduced inside compress: allgather had an empty payload to gather
    # (a reshape error), alltoall's flat chunks went dense, both unsaid.
    ("powersgd", "communicator", "allgather", ValueError, "leave communicator='allreduce' .*, not 'allgather'"),
    ("powersgd", "communicator", "alltoall", ValueError, "leave communicator='allreduce' .*, not 'alltoall'"),
])
def test_bad_parameters_are_refused_when_the_compressor_is_built(name, key, bad, error, match):
    with pytest.raises(error, match=match):
        grace_from_params({"compressor": name, key: bad})


@pytest.mark.parametrize("params, error, match", [
    ({"memory": "dgc", "momentum": 5}, ValueError, r"momentum must be in \[0.0, 1.0\], got 5"),
    ({"memory": "dgc", "momentum": "0.9"}, TypeError, "momentum must be a number, got '0.9'"),
    ({"memory": "dgc", "gradient_clipping": "no"}, TypeError, "gradient_clipping must be True or False, got 'no'"),
    ({"auto_off": "false"}, TypeError, "auto_off must be True or False, got 'false'"),
    ({"auto_off": True, "auto_off_warmup": 1.5}, ValueError, "auto_off_warmup must be an integer, got 1.5"),
    ({"auto_off": True, "auto_off_min_numel": "10"}, TypeError, "auto_off_min_numel must be a number"),
    ({"compressor": "lgc", "memory": "none", "communicator": "allreduce", "lgc_lr": -1}, ValueError, "lgc_lr must be a finite number > 0.0, got -1"),
    ({"compressor": "lgc", "memory": "none", "communicator": "allreduce", "lgc_seed": 1.5}, ValueError, "lgc_seed must be an integer, got 1.5"),
    ({"compressor": "lgc", "memory": "none", "communicator": "allreduce", "lgc_seed": -3}, ValueError, "lgc_seed must be an integer in"),
    ({"compressor": "lgc", "memory": "none", "communicator": "allreduce", "lgc_dense_ends": "no"}, TypeError,
     "lgc_dense_ends must be True or False, got 'no'"),
    ({"deepreduce": "index", "index": "bloom", "micro-benchmark": "no"}, TypeError,
     "micro-benchmark must be True or False"),
    # A string or a bool for a count: a plain ValueError (True ran as one team).
    ({"communicator": "spardl", "spardl_teams": "2"}, TypeError, "spardl_teams must be a number, got '2'"),
    ({"communicator": "spardl", "spardl_teams": True}, TypeError, "spardl_teams must be a number, got True"),
    ({"compressor": "lgc", "memory": "none", "communicator": "allreduce", "lgc_train_steps": "200"}, TypeError,
     "lgc_train_steps must be a number, got '200'"),
    ({"compressor": "lgc", "memory": "none", "communicator": "allreduce", "lgc_dense_steps": True}, TypeError,
     "lgc_dense_steps must be a number, got True"),
    # Both were read at the first step only (inside a training run's workers).
    ({"transport": "bogus"}, ValueError, "transport must be a Transport or one of 'torch', 'mpi', 'local'; got 'bogus'"),
    ({"world_size": 0}, ValueError, r"world_size must be an integer in \[1, 2147483647\], got 0"),
    ({"compressor": "powersgd", "memory": "powersgd", "communicator": "allreduce", "world_size": "2"}, TypeError,
     "world_size must be a number, got '2'"),
    # The efsignsgd memory took any lr: a string failed at the first step, NaN made every
    # step non-finite (and so skipped), a negative one was used.
    ({"compressor": "signsgd", "memory": "efsignsgd", "lr": "0.1"}, TypeError, "lr must be a number, got '0.1'"),
    ({"compressor": "signsgd", "memory": "efsignsgd", "lr": float("nan")}, ValueError, "lr must be a finite number > 0"),
    ({"memory": "efsignsgd", "lr": -1.0}, ValueError, r"lr must be a finite number > 0.0, got -1.0"),
])
def test_memories_auto_off_lgc_and_wrappers_refuse_bad_parameters_by_name(params, error, match):
    """A yes/no key given as a string ('no', 'false': true, by its length), a momentum
    outside [0, 1], a negative learning rate or a fractional seed were taken silently,
    or failed later with a message that did not name the key."""
    if params.get("compressor") == "lgc":
        pytest.importorskip("torch")
    with pytest.raises(error, match=match):
        deepreduce_from_params({"compressor": "topk", "memory": "residual", "communicator": "allgather", **params})


def test_flags_take_bools_and_zero_or_one():
    from deepreduce.checks import flag
    assert [flag(v, "x") for v in (True, False, np.bool_(True), 1, 0)] == [True, False, True, True, False]
    for bad in ("yes", 2, None, 1.0):
        with pytest.raises(TypeError, match="x must be True or False"):
            flag(bad, "x")


def test_number_checks_open_and_closed_ends_and_refuses_non_finite_values():
    from deepreduce.checks import number
    assert number(0.0, "x", 0.0) == 0.0 and number(1e-30, "x", 0.0, low_open=True) == 1e-30
    with pytest.raises(ValueError, match="x must be a finite number > 0.0, got 0.0"):
        number(0.0, "x", 0.0, low_open=True)
    with pytest.raises(ValueError, match=r"x must be in \(0, 1\), got 1"):
        number(1, "x", 0, 1, low_open=True, high_open=True)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="x must be a finite number >= 0"):
            number(bad, "x", 0.0)
    with pytest.raises(ValueError, match=r"lgc_innovation_ratio must be in \(0, 1\], got 0"):
        grace_from_params({"compressor": "lgc", "lgc_innovation_ratio": 0})
    with pytest.raises(ValueError, match=r"spardl density must be in \(0, 1\], got nan"):
        grace_from_params({"compressor": "topk", "communicator": "spardl", "density": float("nan")})


@pytest.mark.parametrize("value, key, bad, match", [
    ("qsgd", "quantum_num", 2.5, "quantum_num must be an integer"),
    ("qsgd", "bucket_size", 2 ** 40, "bucket_size must be an integer in"),
    ("polyfit", "poly_degree", 2.5, "poly_degree must be an integer"),
    ("deflate", "deflate_level", "6", "deflate_level must be a number"),
    ("qsgd", "fpr", "0.1", "fpr must be a number"),
    ("qsgd", "min_numel", "10", "min_numel must be a number")])
def test_bad_wrapper_parameters_are_refused(value, key, bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        deepreduce_from_params({"compressor": "topk", "deepreduce": "both", "index": "bloom", "value": value,
                                key: bad})


def test_a_bloom_fpr_past_the_filters_64_hashes_is_refused_when_built():
    """fpr = 1e-20 needs 67 hashes, past DR_BLOOM_MAX_HASHES: it passed the build's check
    and failed at the first step with the C core's 'invalid argument'."""
    params = {"compressor": "topk", "deepreduce": "index", "index": "bloom"}
    with pytest.raises(ValueError, match=r"fpr must be at least 2\^-64 .*, got 1e-20"):
        deepreduce_from_params({**params, "fpr": 1e-20})
    grc = deepreduce_from_params({**params, "fpr": 2.0 ** -64, "communicator": "allgather", "transport": "local"})
    x = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    assert np.count_nonzero(grc.step(x, "w")) == 1500


@pytest.mark.parametrize("key, bad", [("compressor", ["topk"]), ("memory", ["residual"]),
                                      ("communicator", {"allgather"}), ("deepreduce", ["index"]),
                                      ("index", ["bloom"]), ("value", {"codec": "qsgd"}), ("policy", ["p0"]),
                                      ("spardl_index_codec", ["rice"])])
def test_a_list_or_set_for_a_name_is_refused_by_name(key, bad):
    """A list where a name belongs failed as a bare 'unhashable type' naming no key."""
    params = {"compressor": "topk", "communicator": "allgather", "deepreduce": "both", key: bad}
    if key == "spardl_index_codec":
        params.update(communicator="spardl", deepreduce=None)
    with pytest.raises(ParameterTypeError, match=r"must be a name \(a string\), got .*; valid names: "):
        deepreduce_from_params(params)


@pytest.mark.parametrize("mode", [None, False, "", 0])
def test_a_false_deepreduce_mode_leaves_the_compressor_unwrapped(mode):
    """The reference wraps only ``if deepreduce:``; False and '' were unknown modes here."""
    grc = deepreduce_from_params({"compressor": "topk", "communicator": "allgather", "deepreduce": mode})
    assert type(grc.compressor).__name__ == "TopKCompressor"


@pytest.mark.parametrize("params, bins, bound_bits", [
    ({"compressor": "sketch", "quantiles": 16}, 16, None),
    ({"compressor": "sketch", "quantiles": 16, "quantum_num": 16}, 16, None),
    ({"compressor": "inceptionn", "error_bound": 2e-5}, None, 5),
    ({"compressor": "inceptionn"}, None, 10)])
def test_gracetensorflows_quantiles_and_error_bound_are_read_in_torch_scripts_too(params, bins, bound_bits):
    """docs/params.md says sketch reads quantiles and inceptionn error_bound; through the
    torch grace_from_params both were ignored (127 bins, 10 bits whatever was given)."""
    compressor = grace_from_params(params).compressor
    assert getattr(compressor, "bins", None) == bins and getattr(compressor, "bound_bits", None) == bound_bits


@pytest.mark.parametrize("params, key", [({"compressor": "sketch", "quantiles": 16, "quantum_num": 32}, "quantum_num"),
                                         ({"compressor": "inceptionn", "error_bound": 2e-5, "inceptionn_bits": 3},
                                          "inceptionn_bits")])
def test_a_setting_given_under_both_its_names_is_refused(params, key):
    with pytest.raises(ValueError, match=f"{key}=.* were both given"):
        grace_from_params(params)


def test_a_misspelt_params_key_is_warned_of_and_other_unknown_keys_are_not():
    """'compress_ration' silently left compress_ratio at 0.3: 15 times the bytes."""
    with pytest.warns(UserWarning, match="params key 'compress_ration' is not one deepreduce reads: did you mean "
                                         "'compress_ratio'"):
        grace_from_params({"compressor": "topk", "compress_ration": 0.01})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a script's own settings, and what DeepReduce's code puts there
        grace_from_params({"compressor": "topk", "epochs": 3, "hash_table": None, "dense_tensor": None})


def test_fp16_payload_of_the_wrong_length_or_dtype_is_a_frame_error():
    c = grace_from_params({"compressor": "fp16"}).compressor
    x = np.linspace(-1, 1, 100, dtype=np.float32)
    (half,), ctx = c.compress(x, "w")
    for bad in (half[:-1], np.zeros(101, np.float16), half.astype(np.float32)):
        with pytest.raises(FrameError, match="fp16 payload"):
            c.decompress([bad], ctx)


def test_fp16_overflow_is_infinity_as_in_torch_and_grace():
    """Decided (docs/reliability.md): |x| > 65504 rounds to ±Inf as IEEE round-to-nearest
    gives, the same as torch's .half(), its fp16 DDP hook and GRACE, so AMP's GradScaler
    sees the overflow and skips the step; 65504 and values that round to it are kept."""
    torch = pytest.importorskip("torch")
    c = grace_from_params({"compressor": "fp16"}).compressor
    x = np.array([65504, 65519.99, 65520, -7e4, 1e38, 1.0], dtype=np.float32)
    out = np.asarray(c.decompress(*c.compress(x, "w")))
    assert out.tolist() == [65504, 65504, np.inf, -np.inf, np.inf, 1.0]
    assert np.array_equal(out, torch.from_numpy(x).half().float().numpy())


@pytest.mark.parametrize("size", [2, 3, 7, 2048, 3001])
def test_fp16_allreduce_sends_numpys_float16_quotients(size):
    """Each rank sends its share x/P in float16 (the sum of the halves overflowed where the
    mean fits), through the C conversions (NumPy's own float16 division took 15 ms a
    million): on every finite float16 value the quotient is NumPy's for a world size
    float16 holds; for one it cannot hold (3001, which NumPy first rounds to 3000) the
    quotient by the size itself. A transport of P ranks whose others send zeros: the sum
    is this rank's share."""
    from deepreduce.transports.local import LocalTransport

    class OthersSendZeros(LocalTransport):
        def __init__(self):
            super().__init__()
            self.size = size

    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    every = every[np.isfinite(every)]
    parts = grace_from_params({"compressor": "fp16", "communicator": "allreduce"})
    grc = type(parts)(parts.compressor, parts.memory, transport=OthersSendZeros())
    got = np.asarray(grc.step(every.astype(np.float32), "w"))
    want = (every.astype(np.float32) / np.float32(size)).astype(np.float16)
    if size < 2049:
        assert np.array_equal(want, every / size)
    assert np.array_equal(got, want.astype(np.float32))


# ------------------------------------------------------------- peers: a dead MPI rank
@pytest.mark.slow
@pytest.mark.parametrize("how, names_rank", [("exit", r"\[\[\d+,\d+\],1\]"), ("kill", r"process rank 1 "),
                                            ("raise", r"ValueError: rank 1 gives up")])
def test_a_dead_mpi_rank_ends_the_job_naming_the_rank(how, names_rank):
    """Open MPI's runtime ends the job when a rank dies (our transport leaves its errors
    returning, and never blocks in Python outside an MPI call): the survivors do not
    hang, and mpirun's message names the failed rank. A rank whose script raised waited
    in MPI_Finalize while the others waited for it: the job hung for ever; the transport
    now aborts the job on an uncaught exception, as ``python -m mpi4py`` would."""
    exe = shutil.which("mpirun")
    assert exe is not None, "mpirun missing: run scripts/setup.sh (openmpi-bin)"
    pytest.importorskip("mpi4py")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    script = os.path.join(os.path.dirname(__file__), "mpi_dead_rank.py")
    start = time.monotonic()
    result = subprocess.run([exe, "--oversubscribe", "-np", "3", sys.executable, script, how], capture_output=True,
                            text=True, timeout=120, env=env)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "finished" not in result.stdout, output
    assert re.search(names_rank, output), output
    assert time.monotonic() - start < 60


def test_public_entry_points_name_a_bad_argument():
    """Each was an AttributeError from inside (the timer's at the block's end), or, for the
    DDP hook's state, a dense state built from a list without a word."""
    pytest.importorskip("torch")
    from deepreduce.accounting import tensor_bits, timer
    from deepreduce.torch import DeepReduceHookState
    with pytest.raises(TypeError, match=re.escape("IndexCompressor wraps a compressor (grc.compressor")):
        IndexCompressor(None, {})
    with pytest.raises(TypeError, match="tensor_bits takes a NumPy array or a torch tensor, got list"):
        tensor_bits([1, 2])
    with pytest.raises(TypeError, match=re.escape("stats must be a deepreduce.stats.Stats")):
        timer("x", stats="s")
    with pytest.raises(ParameterTypeError, match="params must be a dict, got list"):
        DeepReduceHookState([])
