"""DeepReduce's wrappers: the README usage, Fig. 8's exact volumes, what every index
codec and policy rebuilds, value alignment in 'both' mode, damaged and foreign frames,
truthful tensors_size_are_same, no global RNG, and codecs against the entropy floor."""
import math
import zlib

import numpy as np
import pytest

import deepreduce
from deepreduce._native import lib, u8
from deepreduce import DeepReduce, FrameError, IndexCompressor, ValueCompressor, grace_from_params
from deepreduce.codecs import Workspace, index_codec, value_codec
from deepreduce.codecs.index import encode_section, floor_bits
from deepreduce.wrappers import deepreduce_from_params, section_bytes
from own_frame import check_own_decode_served_once

D = 36_864  # one ResNet-20 layer, 3x3x64x64
INDEX_CODECS = ["bloom", "rle", "huffman", "ef", "rice", "varint", "raw"]
LOSSLESS = ["rle", "huffman", "ef", "rice", "varint", "raw"]
VALUE_CODECS = ["polyfit", "dexp", "deflate", "qsgd", "fp16", "bf16", "raw"]
POLICIES = ["leftmost", "random", "p0", "conflict_sets"]


def gradient(seed=0, d=D, loc=0.0):
    return np.random.default_rng(seed).laplace(loc, 1.0, size=d).astype(np.float32)


def params_for(mode, **extra):
    params = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.01,
              "deepreduce": mode}
    params.update(extra)
    return params


def wrap(mode, **extra):
    """The README's way: build, then wrap grc.compressor."""
    params = params_for(mode, **extra)
    grc = grace_from_params(params)
    return {"value": ValueCompressor, "index": IndexCompressor, "both": DeepReduce}[mode](grc.compressor, params)


def round_trip(wrapper, g, name="w"):
    tensors, ctx = wrapper.compress(g, name)
    return tensors, ctx, wrapper.decompress(tensors, ctx)


def topk_support(g, r):
    return np.sort(np.argsort(-np.abs(g), kind="stable")[:r]).astype(np.uint32)


# ---------------------------------------------------------------------------------- API
@pytest.mark.parametrize("mode", ["value", "index", "both"])
def test_readme_snippet_runs_as_written(mode):
    params = {'compressor': 'topk', 'memory': 'residual', 'communicator': 'allgather', 'compress_ratio': 0.01,
              'deepreduce': mode, 'index': 'bloom'}
    grc = grace_from_params(params)
    DReduce = {'value': ValueCompressor, 'index': IndexCompressor, 'both': DeepReduce}[params['deepreduce']](
        grc.compressor, params)
    grc.compressor = DReduce
    torch = pytest.importorskip("torch")
    for step in range(3):
        g = gradient(step).reshape(64, 64, 3, 3)
        out = grc.step(torch.from_numpy(g), "conv")
        assert isinstance(out, torch.Tensor) and out.shape == g.shape
        assert 0 < np.count_nonzero(out.numpy()) < g.size // 50
    out = grc.step(gradient(9), "conv")  # NumPy in, NumPy out
    assert isinstance(out, np.ndarray) and out.shape == (D,)
    assert deepreduce.stats.GLOBAL.per_name["conv"].bytes_sent > 0


def test_deepreduce_from_params_wraps_or_not():
    grc = deepreduce_from_params(params_for("both", index="ef", value="qsgd"))
    assert isinstance(grc.compressor, DeepReduce)
    assert type(grc.compressor.sparsifier).__name__ == "TopKCompressor"
    plain = deepreduce_from_params(params_for(None))
    assert type(plain.compressor).__name__ == "TopKCompressor"
    from grace_dl.dist.compressor.deepreduce import deepreduce_from_params as alias
    assert alias is deepreduce_from_params


def test_bad_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid names: bloom, rle"):
        wrap("index", index="bogus")
    with pytest.raises(ValueError, match="valid names: polyfit, polyfit_cpu, dexp"):
        wrap("value", value="bogus")
    with pytest.raises(ValueError, match="valid policies"):
        wrap("index", policy="bogus")
    with pytest.raises(ValueError, match="valid modes"):
        deepreduce_from_params(params_for("bogus"))
    with pytest.raises(ValueError, match="fpr"):
        wrap("index", fpr=1.5)


@pytest.mark.parametrize("fpr", [0, 1, 1.5, -0.1, float("nan")])
def test_bloom_fpr_out_of_range_gets_one_message(fpr):
    """Both ends of the open range (0, 1) are refused with the same message."""
    with pytest.raises(ValueError, match=rf"^fpr must be in \(0, 1\), got {fpr!r}$"):
        wrap("index", fpr=fpr)


# ---------------------------------------------------------------------- Fig. 8 volumes
def test_fig8_volumes_are_exact():
    """DeepReduce Fig. 8 (SPEC §10): d = 36,864, top-1% r = 368, fpr 1e-3."""
    g = gradient()
    assert np.count_nonzero(g[topk_support(g, 368)] > 0) == 186
    cases = {
        ("index", "bloom", "raw"): (662, 1472, 0),
        ("value", "raw", "qsgd"): (1472, 372, 0),
        # Fit-Poly, the paper's knots: 3 + 1 knots, 6 pieces, 6 + 4 * 4 + 36 * 4 bytes
        ("value", "raw", "polyfit"): (1472, 166, 0),
        ("both", "bloom", "polyfit"): (662, 166, 414),  # the permutation at 9 bits, never int64
        ("both", "bloom", "qsgd"): (662, 372, 0),
        ("value", "raw", "dexp"): (1472, 32, 0),  # Fit-DExp: 4 float64; the signs ride with the indices
        ("both", "bloom", "dexp"): (662, 32, 460),  # 9-bit permutation entries + a sign bit
    }
    for (mode, index, value), sizes in cases.items():
        tensors, ctx, _ = round_trip(wrap(mode, index=index, value=value, fpr=1e-3), g)
        assert ctx.indices.size == 368
        *codec, overhead = section_bytes(tensors[0])
        assert tuple(codec) == sizes, (mode, index, value)
        assert overhead == 44 + 4 * (3 if sizes[2] else 2) + 4  # header + CRC, outside the paper's figures
    # top-r: raw indices and values, 2.00% of dense
    tensors, _, _ = round_trip(wrap("index", index="raw"), g)
    assert sum(section_bytes(tensors[0])[:3]) / (4 * D) == pytest.approx(0.0200, abs=5e-5)


def test_qsgd_value_bucket_defaults_to_512_unless_params_say():
    g = gradient()
    tensors, _, _ = round_trip(wrap("value", value="qsgd"), g)
    assert section_bytes(tensors[0])[1] == 4 + 368      # one bucket of 512
    tensors, _, _ = round_trip(wrap("value", value="qsgd", bucket_size=128), g)
    assert section_bytes(tensors[0])[1] == 3 * 4 + 368  # three buckets of 128


# ------------------------------------------------------------------ index codecs, sets
@pytest.mark.parametrize("codec", LOSSLESS)
def test_lossless_index_codecs_round_trip_exactly(codec):
    for g, ratio in [(gradient(1), 0.01), (gradient(2), 0.3), (gradient(3), 1.0)]:
        w = wrap("index", index=codec, compress_ratio=ratio)
        tensors, ctx, out = round_trip(w, g)
        r = max(1, int(g.size * ratio))
        expected = np.zeros_like(g)
        support = topk_support(g, r)
        expected[support] = g[support]
        assert np.array_equal(ctx.indices, support)
        assert out.tobytes() == expected.tobytes()


@pytest.mark.parametrize("codec", INDEX_CODECS)
def test_an_empty_selection_is_a_legal_payload(codec):
    params = {"compressor": "threshold", "threshold": 100.0, "deepreduce": "both", "index": codec, "value": "qsgd"}
    grc = deepreduce_from_params(params)
    tensors, ctx = grc.compressor.compress(gradient(), "t")
    assert ctx.indices.size == 0
    assert not grc.compressor.decompress(tensors, ctx).any()


def murmur3_u32(keys, seed):
    """MurmurHash3 x86_32 of each 4-byte little-endian key (NumPy, from the reference)."""
    mask = np.uint64(0xFFFFFFFF)

    def rotl(x, r):
        return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & mask

    k = keys.astype(np.uint64)
    k = (k * np.uint64(0xCC9E2D51)) & mask
    k = rotl(k, 15)
    k = (k * np.uint64(0x1B873593)) & mask
    h = np.uint64(seed) ^ k
    h = rotl(h, 13)
    h = (h * np.uint64(5) + np.uint64(0xE6546B64)) & mask
    h ^= np.uint64(4)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & mask
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & mask
    h ^= h >> np.uint64(16)
    return h


def filter_of(frame):
    """(filter bits as bools, m_bits, k_hash, policy) of a bloom frame, read by hand."""
    header = lib.dr_frame_header_size(int(frame[9]))
    m_bits, packed = np.frombuffer(frame[12:20].tobytes(), dtype=np.uint32)
    index_len = int(np.frombuffer(frame[44:48].tobytes(), dtype=np.uint32)[0])
    bits = np.unpackbits(frame[header:header + index_len], bitorder="little")[:m_bits].astype(bool)
    return bits, int(m_bits), int(packed & 0xFF), int(packed >> 8)


def hash_bits(positions, m_bits, k_hash):
    return np.stack([murmur3_u32(positions, j) % np.uint64(m_bits) for j in range(k_hash)]).astype(np.int64)


@pytest.mark.parametrize("policy", POLICIES)
def test_bloom_policies_rebuild_the_set_they_define(policy):
    """The positives P, from the filter by the hash definition (SPEC §4, hashed on the fly:
    no precomputed table), and the policy's pick of them."""
    g = gradient(4)
    r = 368
    true = topk_support(g, r)
    tensors, ctx, out = round_trip(wrap("index", index="bloom", policy=policy, fpr=2e-2), g)
    bits, m_bits, k_hash, code = filter_of(tensors[0])
    assert code == {"leftmost": 0, "random": 1, "p0": 2, "conflict_sets": 3}[policy]
    positions = np.arange(D, dtype=np.uint32)
    hashes = hash_bits(positions, m_bits, k_hash)
    positives = positions[bits[hashes].all(axis=0)]
    assert np.isin(true, positives).all()          # no false negatives
    assert positives.size > r                       # fpr 2% of 36,864 leaves some false positives
    rebuilt = ctx.indices
    assert np.all(np.diff(rebuilt.astype(np.int64)) > 0) and np.isin(rebuilt, positives).all()
    if policy == "p0":
        assert np.array_equal(rebuilt, positives)
    else:
        assert rebuilt.size == r
    if policy == "leftmost":
        assert np.array_equal(rebuilt, positives[:r])
    if policy == "conflict_sets":
        # a bit set by exactly one positive was set by a true index: that one is picked
        ph = hash_bits(positives, m_bits, k_hash)  # (k_hash, |P|)
        pairs = np.unique(ph * positives.size + np.arange(positives.size))  # distinct (bit, positive)
        counts = np.bincount(pairs // positives.size, minlength=m_bits)
        sure = positives[(counts[ph] == 1).any(axis=0)]
        assert sure.size > 0
        assert np.isin(sure, true).all() and np.isin(sure, rebuilt).all()
    # values come from the dense tensor at exactly the rebuilt indices (false positives too)
    expected = np.zeros_like(g)
    expected[rebuilt] = g[rebuilt]
    assert out.tobytes() == expected.tobytes()


def test_random_and_conflict_sets_are_the_same_on_every_rank_and_run():
    g = gradient(5)
    for policy in ("random", "conflict_sets"):
        a = wrap("index", index="bloom", policy=policy, fpr=2e-2)
        b = wrap("index", index="bloom", policy=policy, fpr=2e-2)
        ta, ca, _ = round_trip(a, g)
        tb, cb, _ = round_trip(b, g)
        assert ta[0].tobytes() == tb[0].tobytes() and np.array_equal(ca.indices, cb.indices)
        # the receiver (another wrapper, another ctx) rebuilds the same set
        assert np.array_equal(np.flatnonzero(b.decompress(ta, cb)), ca.indices)


# --------------------------------------------------------------- 'both': value alignment
def reference_values(codec_name, values, name):
    """What the value codec alone makes of ``values``: (decoded values, perm or None)."""
    codec = value_codec(codec_name)
    work = Workspace()
    buf = np.zeros(codec.bound(values.size) + 8, dtype=np.uint8)
    written, perm = codec.encode(values, u8(buf), buf.nbytes, name, work)
    perm = None if perm is None else perm.copy()
    decoded = codec.decode(buf, 0, written, values.size, codec.params, work).copy()
    if codec.signs_in_index:  # magnitudes in the section, the signs beside the indices
        decoded = np.where(np.signbit(values[perm]), -decoded, decoded)
    return decoded, perm


@pytest.mark.parametrize("value", VALUE_CODECS)
@pytest.mark.parametrize("policy", POLICIES)
def test_both_puts_each_value_on_its_index(policy, value):
    """SPEC §11: DeepReduce's 'both' mode paired values with the wrong indices."""
    g = gradient(6)
    w = wrap("both", index="bloom", policy=policy, value=value, fpr=1e-2)
    tensors, ctx, out = round_trip(w, g, name="layer")
    rebuilt = ctx.indices
    assert np.isin(np.flatnonzero(out), rebuilt).all()
    decoded, perm = reference_values(value, g[rebuilt], "layer")
    expected = np.zeros_like(g)
    expected[rebuilt if perm is None else rebuilt[perm]] = decoded
    assert out.tobytes() == expected.tobytes()
    # and independently: the values sit where the gradient has them (a shuffle would not)
    assert np.corrcoef(out[rebuilt], g[rebuilt])[0, 1] > 0.7


@pytest.mark.parametrize("value", ["polyfit", "dexp"])
@pytest.mark.parametrize("index", ["raw", "ef"])
def test_reordering_codecs_keep_pairs_with_raw_and_set_indices(index, value):
    g = gradient(7)
    mode = "value" if index == "raw" else "both"
    tensors, ctx, out = round_trip(wrap(mode, index=index, value=value), g, name="x")
    decoded, perm = reference_values(value, g[ctx.indices], "x")
    expected = np.zeros_like(g)
    expected[ctx.indices[perm]] = decoded
    assert out.tobytes() == expected.tobytes()
    # dexp's signs ride in the permutation: 9 + 1 bits per entry
    bits = 9 + (value == "dexp")
    assert section_bytes(tensors[0])[2] == (0 if index == "raw" else math.ceil(368 * bits / 8))


# -------------------------------------------------------------------- damaged frames
CONFIGS = [("both", "bloom", "polyfit", "leftmost"), ("both", "bloom", "qsgd", "p0"),
           ("both", "ef", "dexp", "leftmost"), ("both", "rice", "deflate", "leftmost"),
           ("value", "raw", "polyfit", "leftmost"), ("index", "huffman", "raw", "leftmost"),
           ("both", "rle", "fp16", "leftmost"), ("both", "varint", "bf16", "leftmost")]


@pytest.mark.parametrize("mode,index,value,policy", CONFIGS[:5])
def test_the_memorys_decode_of_the_own_frame_serves_one_decompress_of_the_same_bytes(mode, index, value, policy):
    """As for the quantisers (own_frame.py): the memory's decode of the own frame serves
    the allgather's decompress of the same bytes, once."""
    check_own_decode_served_once(wrap(mode, index=index, value=value, policy=policy), gradient(10), gradient(11))


@pytest.mark.parametrize("world, me", [(2, 0), (3, 2)])
@pytest.mark.parametrize("mode,index,value,policy", CONFIGS)
def test_every_ranks_frame_scatter_added_into_one_tensor_is_the_bits_of_the_decoded_sum(
        mode, index, value, policy, world, me):
    """The allgather's aggregate of wrapped frames: each rank's entries scatter-added into
    one tensor (this rank's own decode, from lost, added whole), then averaged in place:
    the bits of decompressing every frame, summing (Python's sum) and dividing."""
    ranks = [wrap(mode, index=index, value=value, policy=policy) for _ in range(world)]
    grads = [gradient(40 + r) for r in range(world)]
    compressed = [rank.compress(g, "w") for rank, g in zip(ranks, grads)]
    frames = [tensors for tensors, _ in compressed]
    comp, ctx = ranks[me], compressed[me][1]
    expected = sum(np.array(comp.decompress(f, ctx)) for f in frames) / np.float32(world)
    comp.lost(grads[me], frames[me], ctx, np.empty_like(grads[me]))
    got = comp.decompress_aggregate(frames, ctx, world)
    assert ctx.own is None  # the own decode was used
    assert np.asarray(got).tobytes() == expected.tobytes()
    bad = grads[1].copy()
    bad[3] = np.nan
    poisoned = [frames[0], ranks[1].compress(bad, "w")[0]] + frames[2:]
    assert np.isnan(comp.decompress_aggregate(poisoned, ctx, world)).all()


@pytest.mark.parametrize("mode,index,value,policy", CONFIGS)
def test_every_single_byte_change_is_refused(mode, index, value, policy):
    w = wrap(mode, index=index, value=value, policy=policy, compress_ratio=0.005)
    g = gradient(8)
    tensors, ctx, _ = round_trip(w, g)
    frame = tensors[0]
    positions = np.arange(frame.size)
    if frame.size > 600:  # header, the first and last bytes of every section, a sample in between
        rng = np.random.default_rng(0)
        positions = np.unique(np.concatenate([positions[:80], positions[-80:], rng.choice(frame.size, 300)]))
    for pos in positions:
        for flip in (0x01, 0x80):
            bad = frame.copy()
            bad[pos] ^= flip
            with pytest.raises(FrameError):
                w.decompress([bad], ctx)
    for cut in (0, 10, frame.size // 2, frame.size - 1):
        with pytest.raises(FrameError):
            w.decompress([frame[:cut]], ctx)


def resealed(frame, edit):
    """The frame after ``edit(bytearray)``, with a fresh CRC: damage the CRC cannot see."""
    body = bytearray(frame[:-4].tobytes())
    edit(body)
    return np.frombuffer(bytes(body) + zlib.crc32(body).to_bytes(4, "little"), dtype=np.uint8)


def test_well_sealed_nonsense_is_refused_or_decoded_never_a_crash():
    rng = np.random.default_rng(1)
    for mode, index, value, policy in CONFIGS:
        w = wrap(mode, index=index, value=value, policy=policy, compress_ratio=0.005)
        tensors, ctx, _ = round_trip(w, gradient(9))
        frame = tensors[0]
        for _ in range(150):
            pos, byte = int(rng.integers(frame.size - 4)), int(rng.integers(256))

            def edit(body, pos=pos, byte=byte):
                body[pos] = byte
            try:
                out = w.decompress([resealed(frame, edit)], ctx)
            except FrameError:
                continue
            assert out.shape == (ctx.numel,)


def test_crafted_fields_are_refused_with_reasons():
    g = gradient(10)
    w = wrap("both", index="bloom", value="polyfit", policy="random")
    tensors, ctx, _ = round_trip(w, g)
    frame = tensors[0]

    def set_u32(off, value):
        def edit(body):
            body[off:off + 4] = int(value).to_bytes(4, "little")
        return edit
    header = 44 + 12
    index_len, value_len = (int(x) for x in np.frombuffer(frame[44:52].tobytes(), dtype=np.uint32))
    perm_off = header + index_len + value_len
    for edit, reason in [(set_u32(16, 0), "k_hash"), (set_u32(16, 10 | 9 << 8), "policy"),
                         (set_u32(20, 99), "polyfit"), (set_u32(24, 7), "polyfit"),
                         (set_u32(perm_off, 0xFFFFFFFF), "permutation"),
                         (set_u32(perm_off, 0), "permutation")]:
        with pytest.raises(FrameError, match=reason):
            w.decompress([resealed(frame, edit)], ctx)


def test_foreign_frames_are_refused_with_a_clear_message():
    g = gradient(11)
    w = wrap("both", index="ef", value="qsgd")
    _, ctx, _ = round_trip(w, g)
    topk = grace_from_params({"compressor": "topk", "compress_ratio": 0.01}).compressor
    plain, _ = topk.compress(g, "w")
    with pytest.raises(FrameError, match="got kind topk, index codec raw, value codec raw.*expected kind topk, "
                                         "index codec ef, value codec qsgd"):
        w.decompress(plain, ctx)
    qsgd = grace_from_params({"compressor": "qsgd"}).compressor
    with pytest.raises(FrameError, match="got kind qsgd"):
        w.decompress(qsgd.compress(g, "w")[0], ctx)
    other, _, _ = round_trip(wrap("both", index="ef", value="qsgd"), gradient(12, d=D + 1))
    with pytest.raises(FrameError, match="36865 elements, this one has 36864"):
        w.decompress(other, ctx)
    with pytest.raises(FrameError, match="uint8"):
        w.decompress([g], ctx)


# ------------------------------------------------------------- sizes, RNG, small tensors
SIZE_CONFIGS = [("index", "raw", "raw", "leftmost", "topk"), ("value", "raw", "qsgd", "leftmost", "topk"),
                ("both", "bloom", "qsgd", "leftmost", "topk"), ("both", "bloom", "fp16", "random", "topk"),
                ("both", "bloom", "dexp", "conflict_sets", "topk"), ("both", "raw", "bf16", "leftmost", "topk"),
                ("value", "raw", "polyfit", "leftmost", "topk"), ("index", "bloom", "raw", "p0", "topk"),
                ("both", "ef", "qsgd", "leftmost", "topk"), ("both", "rice", "qsgd", "leftmost", "topk"),
                ("both", "rle", "fp16", "leftmost", "topk"), ("both", "huffman", "fp16", "leftmost", "topk"),
                ("both", "varint", "fp16", "leftmost", "topk"), ("value", "raw", "deflate", "leftmost", "topk"),
                ("both", "bloom", "qsgd", "leftmost", "dgc"), ("both", "raw", "qsgd", "leftmost", "threshold")]


def size_probe_gradients():
    """Gradients that move every data-dependent size: signs balanced or not, the large
    entries spread out, packed at the start, or in two blocks."""
    spread = gradient(13)
    packed = gradient(14) * 0.01
    packed[:400] = np.random.default_rng(15).laplace(size=400) * 10 + 20
    blocks = gradient(16) * 0.01
    blocks[1000:1200] = 5.0
    blocks[30000:30200] = -5.0
    return [spread, packed, blocks, gradient(17, loc=0.7)]


@pytest.mark.parametrize("mode,index,value,policy,compressor", SIZE_CONFIGS)
def test_tensors_size_are_same_is_truthful(mode, index, value, policy, compressor):
    """SPEC §11: DeepReduce said True for polyfit and bloom p0, whose sizes vary."""
    w = wrap(mode, index=index, value=value, policy=policy, compressor=compressor, threshold=2.0)
    sizes = {w.compress(g, "w")[0][0].nbytes for g in size_probe_gradients()}
    assert w.tensors_size_are_same == (len(sizes) == 1), sizes


def test_wrappers_never_touch_the_global_rngs():
    torch = pytest.importorskip("torch")
    np.random.seed(123)
    torch.manual_seed(123)
    np_state, torch_state = np.random.get_state()[1].copy(), torch.get_rng_state().clone()
    for policy in ("random", "conflict_sets"):
        for value in ("qsgd", "polyfit"):
            grc = deepreduce_from_params(params_for("both", index="bloom", policy=policy, value=value, fpr=2e-2))
            for step in range(2):
                grc.step(gradient(step), "w")
    assert np.array_equal(np.random.get_state()[1], np_state)
    assert torch.equal(torch.get_rng_state(), torch_state)


def test_small_tensors_skip_the_codecs_and_send_the_raw_top_k():
    """As DeepReduce's reference: a tensor of at most min_numel (1000) entries is still
    top-k'd, and the top-k travels raw (uint32 indices, float32 values); at 1001 the codecs
    apply."""
    w = wrap("both", index="bloom", value="polyfit")
    for d in (999, 1000):
        small = gradient(18, d=d)
        tensors, ctx, out = round_trip(w, small)
        k = max(1, int(d * 0.01))
        assert np.count_nonzero(out) == k and ctx.indices.size == k
        np.testing.assert_array_equal(out[ctx.indices], small[ctx.indices])  # exact values
        assert section_bytes(tensors[0]) == (4 * k, 4 * k, 0, 44 + 2 * 4 + 4)
    tensors, _, _ = round_trip(w, gradient(18, d=1001))
    assert section_bytes(tensors[0])[2] > 0  # polyfit reorders: a permutation travels
    w2 = wrap("both", index="bloom", value="polyfit", min_numel=10)
    tensors, _, _ = round_trip(w2, gradient(18, d=999))
    assert section_bytes(tensors[0])[2] > 0


@pytest.mark.parametrize("index, value", [("bloom_cpu", "polyfit_cpu"), (None, "qsgd"), ("rice", None),
                                          ("rlhff", "gzip")])
def test_the_reference_codec_names_are_accepted(index, value):
    """DeepReduce's README and code write bloom_cpu, rlhff, polyfit_cpu, and None for "no codec"."""
    w = wrap("both", index=index, value=value)
    g = gradient(21)
    tensors, ctx, out = round_trip(w, g)
    assert np.count_nonzero(out) <= max(1, int(g.size * 0.01)) * 2
    expected = {"bloom_cpu": "bloom", None: "raw", "rice": "rice", "rlhff": "huffman"}[index], \
        {"polyfit_cpu": "polyfit_cpu", None: "raw", "qsgd": "qsgd", "gzip": "deflate"}[value]
    assert (w.index_codec.name, w.value_codec.name) == expected


def test_an_inherently_sparse_gradient_codes_exactly_its_nonzeros():
    """NCF-style embedding gradients are sparse already: compressor 'none' wrapped by
    DeepReduce codes exactly the non-zero entries, losslessly with a lossless index codec."""
    g = np.zeros(50_000, dtype=np.float32)
    rows = np.random.default_rng(3).choice(50_000, 700, replace=False)
    g[rows] = np.random.default_rng(4).standard_normal(700).astype(np.float32)
    grc = deepreduce_from_params({"compressor": "none", "deepreduce": "both", "index": "rice", "value": "raw"})
    tensors, ctx = grc.compressor.compress(g, "embedding")
    assert ctx.indices.size == 700
    assert grc.compressor.decompress(tensors, ctx).tobytes() == g.tobytes()
    assert tensors[0].nbytes < 0.03 * g.nbytes


def test_other_compressors_are_wrapped_by_their_nonzeros():
    g = gradient(19)
    params = {"compressor": "randomk", "compress_ratio": 0.02, "deepreduce": "index", "index": "ef"}
    grc = deepreduce_from_params(params)
    tensors, ctx = grc.compressor.compress(g, "w")
    plain = grace_from_params(params).compressor
    pt, pc = plain.compress(g, "w")
    expected = plain.decompress(pt, pc)
    assert grc.compressor.decompress(tensors, ctx).tobytes() == expected.tobytes()
    assert not grc.compressor.tensors_size_are_same


def test_dgc_memory_zeroes_what_the_wrapper_sent():
    grc = deepreduce_from_params({"compressor": "dgc", "memory": "dgc", "communicator": "allgather",
                                  "compress_ratio": 0.01, "deepreduce": "both", "index": "bloom", "value": "qsgd",
                                  "policy": "p0"})
    grc.step(gradient(20), "w")
    v = grc.memory.gradients["w"]
    assert v.size == D and 300 < np.count_nonzero(v == 0) < 600


def test_micro_benchmark_prints_one_line_per_tensor(capsys):
    grc = deepreduce_from_params(params_for("both", index="bloom", value="polyfit", fpr=1e-3,
                                            **{"micro-benchmark": True}))
    grc.step(gradient(), "conv")
    line, = capsys.readouterr().out.strip().splitlines()
    assert line.startswith("[deepreduce] conv: d=36864 r=368 index=662B values=166B perm=414B frame=1302B")
    assert "encode=" in line and "decode=" in line


def test_accounting_helpers():
    from grace_dl.dist.helper import tensor_bits, timer, volume
    torch = pytest.importorskip("torch")
    assert tensor_bits(np.zeros(10, np.float32)) == 320
    assert tensor_bits(torch.zeros(4, dtype=torch.bfloat16)) == 64
    tensors, _, _ = round_trip(wrap("both", index="bloom", value="polyfit", fpr=1e-3), gradient())
    assert volume(tensors) == 8 * 1302
    # powersgd sends P and Q inside compress and returns an empty payload: the plain form
    # reads 0; with its ctx and compressor, the bits it put on the wire, (m + k) r floats.
    powersgd = deepreduce.grace_from_params({"compressor": "powersgd", "communicator": "allreduce"}).compressor
    tensors, ctx = powersgd.compress(torch.ones(64, 300), "w")
    assert volume(tensors) == 0 and volume(tensors, ctx, powersgd) == 8 * 4 * (64 + 300)
    stats = deepreduce.stats.Stats()
    with timer("conv", kind="decode", stats=stats) as t:
        sum(range(1000))
    assert t.seconds > 0 and stats.per_name["conv"].decode_seconds == t.seconds
    assert stats.per_name["conv"].calls == 0

    @timer("fn", stats=stats)
    def work():
        return 7
    assert work() == 7 and work() == 7
    assert stats.per_name["fn"].encode_seconds > 0


# ------------------------------------------------------------- index codecs vs the floor
def index_section_bits(name, d, idx):
    section, _ = encode_section(index_codec(name), idx, d)
    return 8 * section.nbytes / idx.size


@pytest.mark.parametrize("density,floor", [(0.001, 11.41), (0.01, 8.08), (0.1, 4.69)])
def test_rice_and_ef_stay_near_the_floor(density, floor):
    d = 1_000_000
    r = int(d * density)
    assert floor_bits(d, r) == pytest.approx(floor, abs=0.01)  # SPEC §10 quotes H(p)/p, 0.007 above
    idx = np.sort(np.random.default_rng(21).choice(d, r, replace=False)).astype(np.uint32)
    assert index_section_bits("rice", d, idx) <= floor_bits(d, r) + 0.125  # index.h's bound; SPEC says 0.1
    assert index_section_bits("ef", d, idx) <= 1.13 * floor_bits(d, r)


# ----------------------------------------------------------------- real ranks (gloo)
TRAIN_CONFIGS = [
    {"deepreduce": "index", "index": "bloom"},
    {"deepreduce": "both", "index": "ef", "value": "qsgd"},
    {"deepreduce": "both", "index": "bloom", "policy": "conflict_sets", "value": "polyfit"},
    {"deepreduce": "value", "value": "dexp"},
    # issue 13's names: BF-Naive, polyfit_cpu, dexp's signs beside a set codec, skcompress
    {"deepreduce": "index", "index": "bloom", "policy": "naive"},
    {"deepreduce": "value", "value": "polyfit_cpu"},
    {"deepreduce": "both", "index": "rice", "value": "dexp"},
    {"deepreduce": "both", "index": "skcompress", "value": "sketch"},
    {"deepreduce": "both", "index": "skcompress", "value": "skcompress"},
]


def _train_all(rank, world_size):
    import grace_loop
    base = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.1,
            "min_numel": 100}
    return [grace_loop.train(rank, world_size, dict(base, **extra)) for extra in TRAIN_CONFIGS]


@pytest.mark.slow
def test_readme_configurations_train_over_two_gloo_ranks():
    pytest.importorskip("torch")
    import distributed
    rank0, rank1 = distributed.run(_train_all, 2, timeout=300)
    for extra, (p0, losses, _), (p1, _, _) in zip(TRAIN_CONFIGS, rank0, rank1):
        assert p0.tobytes() == p1.tobytes(), extra   # bit-identical ranks
        assert np.isfinite(losses).all(), extra
        if extra.get("policy") != "naive":  # BF-Naive's shifted values need not learn
            assert losses[-1] < 0.7 * losses[0], (extra, losses[0], losses[-1])


def run_benchmark(*args):
    import pathlib
    import subprocess
    import sys
    script = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / args[0]
    result = subprocess.run([sys.executable, str(script), *args[1:]], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_benchmarks_print_fig8_and_the_floor_table():
    fig8 = run_benchmark("fig8.py", "--repeat", "1")
    assert "     bloom     polyfit |   662 ( 0.449%)   166 ( 0.113%)    414 |" in fig8
    assert "       raw        qsgd |  1472 ( 0.998%)   372 ( 0.252%)      0 |" in fig8
    sweep = run_benchmark("fig8.py", "--fpr-sweep")
    assert "conflict_sets" in sweep and " naive |" in sweep
    assert "0.100  100000   4.69   4.69 |" in run_benchmark("index_floor.py")


def test_a_users_own_top_k_gets_bloom_false_positives_with_their_true_values():
    """A sparsifier without select() (a GRACE-style one in torch, our randomk) had its
    Bloom false positives sent as zeros: the values came from its own decompressed output.
    They now come from the tensor, as for our top-k: the same decoded tensor."""
    torch = pytest.importorskip("torch")
    from grace_dl.dist import Compressor

    class TorchTopK(Compressor):  # GRACE's TopKCompressor, in its style
        def compress(self, tensor, name):
            flat = tensor.flatten()
            _, indices = torch.topk(flat.abs(), max(1, int(flat.numel() * 0.01)))
            return [flat[indices], indices], (flat.numel(), tensor.size())

        def decompress(self, tensors, ctx):
            values, indices = tensors
            numel, shape = ctx
            return torch.zeros(numel).scatter_(0, indices, values).view(shape)

    g = torch.from_numpy(gradient(5))
    params = params_for("index", index="bloom", fpr=0.02, policy="p0")
    ours = IndexCompressor(grace_from_params(params).compressor, params)
    theirs = IndexCompressor(TorchTopK(), params)
    got, want = (np.asarray(w.decompress(*w.compress(g, "w"))) for w in (theirs, ours))
    assert np.count_nonzero(want) > 368  # p0 sends the false positives too
    np.testing.assert_array_equal(got, want)
