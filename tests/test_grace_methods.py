"""Every GRACE method of SPEC §3 through the Python API, in one process: the names the
helper accepts, the statistics of the stochastic quantizers, the exact semantics of the
selections, the fixes of SPEC §11 that need no second rank, and bytes on the wire
against the frame formulas. The multi-rank half is in test_grace_distributed.py."""
import importlib
import importlib.util
import math
import pathlib

import numpy as np
import pytest

import deepreduce
from deepreduce import grace_from_params
from deepreduce.compressors._framed import FramedCompressor
from deepreduce.compressors.threshold import ThresholdCompressor
from deepreduce.pairings import PAIRINGS, natural_params
from deepreduce.registry import COMMUNICATORS, COMPRESSORS, MEMORIES
from own_frame import check_own_decode_served_once

# SPEC §3 and §5, written out here rather than read from the registry, so a name the
# registry loses makes these tests fail.
SPEC_COMPRESSORS = ["none", "fp16", "qsgd", "terngrad", "onebit", "signsgd", "signum", "efsignsgd",
                    "natural", "randomk", "topk", "threshold", "dgc", "powersgd", "adaq", "inceptionn",
                    "sketch", "8bit", "u8bit"]
# Beyond SPEC §3: the comparison codecs of DeepReduce's paper, built as compressors.
COMPARISON = {"3lc"}
SPEC_MEMORIES = ["none", "residual", "dgc", "efsignsgd", "powersgd"]
SPEC_COMMUNICATORS = ["allreduce", "allgather", "broadcast", "alltoall"]


def laplace(n, seed, scale=1.0):
    """Gradient-like values: heavy tails, every magnitude distinct with probability 1."""
    return np.random.default_rng(seed).laplace(scale=scale, size=n).astype(np.float32)


def roundtrip(compressor, x, name="w"):
    tensors, ctx = compressor.compress(x, name)
    return compressor.decompress(tensors, ctx), tensors, ctx


# ---------------------------------------------------------------------------- names
@pytest.mark.parametrize("name", SPEC_COMPRESSORS)
def test_helper_accepts_every_spec_compressor_under_graces_import_path(name):
    grc = grace_from_params(natural_params(name))
    target = COMPRESSORS[{"u8bit": "8bit"}.get(name, name)]
    module, cls = target.split(":")
    assert type(grc.compressor) is getattr(importlib.import_module(module), cls)
    # the same class object under GRACE's module path (grace_dl.dist.compressor.<module>)
    alias = importlib.import_module("grace_dl.dist.compressor." + module.rsplit(".", 1)[1])
    assert getattr(alias, cls) is type(grc.compressor)
    # and it runs: world size 1, in process
    g = laplace(300, 1).reshape(20, 15)
    out = grc.step(g, "layer.weight")
    assert out.shape == g.shape and out.dtype == g.dtype and np.isfinite(out).all()


@pytest.mark.parametrize("role, names, table", [("memory", SPEC_MEMORIES, MEMORIES),
                                                 ("communicator", SPEC_COMMUNICATORS, COMMUNICATORS)])
def test_helper_accepts_every_spec_memory_and_communicator(role, names, table):
    for name in names:
        module, cls = table[name].split(":")
        grc = grace_from_params({role: name})
        built = grc.memory if role == "memory" else grc
        assert type(built) is getattr(importlib.import_module(module), cls)


def test_every_spec_compressor_has_a_natural_pairing():
    assert set(PAIRINGS) == set(SPEC_COMPRESSORS) - {"u8bit"} | COMPARISON
    assert natural_params("u8bit") == {"compressor": "u8bit", "memory": "none", "communicator": "allgather"}
    assert natural_params("topk", compress_ratio=0.01)["compress_ratio"] == 0.01
    with pytest.raises(ValueError, match="known: .*topk"):
        natural_params("topq")


def test_broadcast_from_the_helper_needs_no_rank():
    # GRACE's helper called Broadcast(compressor, memory, world_size) and its
    # constructor required a rank: a TypeError before the first step.
    grc = grace_from_params({"compressor": "qsgd", "communicator": "broadcast"})
    g = laplace(256, 2)
    out = grc.step(g, "w")
    assert grc.rank == 0
    # qsgd moves each entry by less than one level, norm/s, of its bucket
    step = np.repeat(np.linalg.norm(g.reshape(2, 128), axis=1) / 127, 128)
    assert (np.abs(out - g) <= step * 1.0001).all()


# ---------------------------------------------------------------------------- unbiased quantizers
def samples(name, x, trials, **params):
    comp = grace_from_params(dict(params, compressor=name, world_size=1)).compressor
    # one name: the step counter moves the key, so every trial draws fresh randomness
    return np.stack([roundtrip(comp, x)[0] for _ in range(trials)]).astype(np.float64)


def terngrad_target(x):
    """TernGrad's expectation: x clipped to ±2.5 σ (population σ)."""
    sigma = np.std(x.astype(np.float64))
    return np.clip(x.astype(np.float64), -2.5 * sigma, 2.5 * sigma)


@pytest.mark.parametrize("name, target", [
    ("qsgd", lambda x: x.astype(np.float64)),
    ("terngrad", terngrad_target),
    ("natural", lambda x: x.astype(np.float64)),
], ids=["qsgd", "terngrad", "natural"])
def test_stochastic_quantizer_is_unbiased(name, target):
    x = laplace(512, 3)  # heavy tails: terngrad's clip bites on about 3% of them
    trials = 3000
    s = samples(name, x, trials)
    error = np.linalg.norm(s.mean(axis=0) - target(x))
    # For an unbiased quantizer E||mean - target||^2 = sum of the per-entry variances
    # / trials; over 512 entries that norm lands within a few % of its expectation, so
    # 1.5x is a safe bound that a bias of the noise's size would still break.
    expected = math.sqrt(s.var(axis=0, ddof=1).sum() / trials)
    assert expected > 0  # it is stochastic at all
    assert error <= 1.5 * expected, (error, expected)
    # and the noise is not the whole story: one draw is far worse than the mean
    assert np.linalg.norm(s[0] - target(x)) > 10 * error


@pytest.mark.parametrize("levels, bucket", [(1, 128), (4, 512), (127, 128)])
def test_qsgd_variance_is_the_stochastic_rounding_variance_and_within_the_bound(levels, bucket):
    x = laplace(2048, 4)
    trials = 1000
    s = samples("qsgd", x, trials, quantum_num=levels, bucket_size=bucket)
    measured = ((s - x) ** 2).sum(axis=1).mean()  # E||Q(x) - x||^2
    xs = x.astype(np.float64).reshape(-1, bucket)
    norms = np.linalg.norm(xs, axis=1, keepdims=True)
    # Rounding s|x|/norm up with probability frac has variance (norm/s)^2 frac(1-frac).
    level = levels * np.abs(xs) / norms
    frac = level - np.floor(level)
    exact = ((norms / levels) ** 2 * frac * (1 - frac)).sum()
    # QSGD's Lemma 3.1, bucket by bucket: E||Q(v) - v||^2 <= min(B/s^2, sqrt(B)/s) ||v||^2
    bound = (min(bucket / levels ** 2, math.sqrt(bucket) / levels) * norms ** 2).sum()
    assert measured <= bound
    assert abs(measured - exact) <= 0.1 * exact, (measured, exact)


# ---------------------------------------------------------------------------- exact selections
@pytest.mark.parametrize("n, ratio", [(1000, 0.01), (4099, 0.3), (200_003, 0.001), (50, 1.0)])
def test_topk_sends_exactly_the_k_largest_magnitudes(n, ratio):
    g = laplace(n, 5)
    out, tensors, _ = roundtrip(grace_from_params({"compressor": "topk", "compress_ratio": ratio}).compressor, g)
    k = max(1, int(n * ratio))
    largest = np.argsort(-np.abs(g), kind="stable")[:k]
    expected = np.zeros_like(g)
    expected[largest] = g[largest]
    assert np.array_equal(out, expected)


def test_topk_with_ties_keeps_k_entries_none_smaller_than_one_left_out():
    g = np.repeat(np.array([3.0, -2.0, 1.0], dtype=np.float32), 10)  # ties at every magnitude
    out, _, _ = roundtrip(grace_from_params({"compressor": "topk", "compress_ratio": 0.5}).compressor, g)
    sent = out != 0
    assert sent.sum() == 15
    assert np.array_equal(out[sent], g[sent])
    assert np.abs(g[sent]).min() >= np.abs(g[~sent]).max()


@pytest.mark.parametrize("threshold", [0.5, 1e-3, 0.0])
def test_threshold_sends_exactly_the_entries_at_or_above_it(threshold):
    t = np.float32(threshold)
    edge = [t, -t, np.nextafter(t, np.float32(0)), -np.nextafter(t, np.float32(0)), 0.0, np.float32(2) * t + 1]
    g = np.concatenate([np.array(edge, dtype=np.float32), laplace(1000, 6, scale=threshold or 1.0)])
    comp = grace_from_params({"compressor": "threshold", "threshold": threshold}).compressor
    out, tensors, ctx = roundtrip(comp, g)
    chosen = np.abs(g) >= t
    assert np.array_equal(out, np.where(chosen, g, 0))
    assert comp.wire_bytes(tensors, ctx) == sparse_bytes(g.size, int(chosen.sum()))  # zeros at t=0 count too


class SelectingThreshold(ThresholdCompressor):
    """GRACE's style of subclass: its own select, which the one-call frame must not skip."""

    def select(self, flat, name):
        return super().select(flat, name)


def test_threshold_frames_in_one_call_are_the_bytes_of_the_calls_they_replace():
    """After a dense selection a name's frames come from one C call; step by step, as the
    selection turns sparse and dense again, the frames, the decode, what a residual
    memory keeps and the indices asked of the ctx are those of the calls path (a
    subclass with its own select, which keeps to it), and a non-finite tensor still
    sends the marker."""
    fused = grace_from_params({"compressor": "threshold", "threshold": 0.5}).compressor
    calls = SelectingThreshold(0.5)
    one_call = []
    for step, scale in enumerate([4.0, 4.0, 0.05, 0.05, 4.0, 1.0]):  # dense, dense, sparse, ..., dense
        g = laplace(10_001, 40 + step, scale=scale)
        (frame,), ctx = fused.compress(g, "w")
        (want,), want_ctx = calls.compress(g, "w")
        if ctx._indices is None:  # asked for below, they are read from the frame
            one_call.append(step)
        assert np.array_equal(np.asarray(frame), np.asarray(want))
        assert np.array_equal(fused.decompress([frame], ctx), calls.decompress([want], want_ctx))
        kept, want_kept = np.empty_like(g), np.empty_like(g)
        fused.lost(g, [frame], ctx, kept)
        calls.lost(g, [want], want_ctx, want_kept)
        assert np.array_equal(kept.view(np.uint32), want_kept.view(np.uint32))
        assert np.array_equal(ctx.indices, want_ctx.indices)
    # After each dense selection but the first (no history yet), the sparse one included.
    assert one_call == [1, 2, 5]
    g[7] = np.nan
    (frame,), ctx = fused.compress(g, "w")
    assert not ctx.finite and np.isnan(fused.decompress([frame], ctx)).all()


def test_threshold_with_residual_memory_keeps_what_the_calls_path_keeps():
    """grc.step with residual memory over steps whose selections are dense: the one-call
    frames and dr_threshold_zero's residual give the steps' results of the calls path."""
    params = {"compressor": "threshold", "threshold": 0.3, "memory": "residual", "communicator": "allgather"}
    fused, calls = grace_from_params(params), grace_from_params(params)
    calls.compressor = SelectingThreshold(0.3)
    for step in range(4):
        g = laplace(5_003, 60 + step)
        assert np.array_equal(fused.step(g.copy(), "w"), calls.step(g.copy(), "w"))
    assert fused.compressor.dense["w"]


# ---------------------------------------------------------------------------- the own frame
FRAMED = [name for name in SPEC_COMPRESSORS + sorted(COMPARISON)
          if isinstance(grace_from_params(natural_params(name)).compressor, FramedCompressor)]


@pytest.mark.parametrize("name", FRAMED)
def test_the_memorys_decode_of_the_own_frame_serves_one_decompress_of_the_same_bytes(name):
    """own_frame.py's check; and a non-finite marker of the own frame decodes to NaN."""
    comp = grace_from_params(natural_params(name)).compressor
    g = laplace(3000, 20)
    check_own_decode_served_once(comp, g, laplace(3000, 21))
    bad = g.copy()
    bad[5] = np.nan
    tensors, ctx = comp.compress(bad, "w")
    comp.lost(bad, tensors, ctx, np.empty_like(bad))
    assert np.isnan(comp.decompress(tensors, ctx)).all()


@pytest.mark.parametrize("world, me", [(1, 0), (2, 0), (3, 1)])
@pytest.mark.parametrize("name", FRAMED)
def test_every_ranks_frame_added_into_one_tensor_is_the_bits_of_graces_aggregate(name, world, me):
    """The allgather's aggregate of framed payloads: decoded one by one and added into
    one tensor (this rank's own decode taken from lost, wherever its frame sits), then
    finished (vote, 1/lr) and averaged in place: the bits of GRACE's way, every payload
    decompressed, summed by Python's sum and aggregated."""
    ranks = [grace_from_params(natural_params(name)).compressor for _ in range(world)]
    grads = [laplace(3000, 30 + r, scale=1e-3) for r in range(world)]
    for g in grads:
        g[::5] = -0.0  # the sum of two -0.0 is -0.0, but 0 + -0.0 + -0.0 (Python's sum) is +0.0
    compressed = [rank.compress(g, "w") for rank, g in zip(ranks, grads)]
    frames = [tensors for tensors, _ in compressed]
    comp, ctx = ranks[me], compressed[me][1]
    decoded = [np.array(comp.decompress(f, ctx)) for f in frames]
    finished = name in ("signsgd", "signum", "efsignsgd")
    # Compressor.aggregate hands one rank's tensor back as it is; else Python's sum.
    expected = decoded[0] if world == 1 and not finished else sum(decoded)
    if name in ("signsgd", "signum"):
        expected = np.where(expected >= 0, 1.0, -1.0).astype(np.float32)
    elif name == "efsignsgd":
        expected = expected / np.float32(comp.learning_rate)
    if comp.average:
        expected = expected / np.float32(world)
    comp.lost(grads[me], frames[me], ctx, np.empty_like(grads[me]))
    assert ctx.own is not None
    got = comp.decompress_aggregate(frames, ctx, world if comp.average else 1)
    assert ctx.own is None  # the own decode was used
    assert np.asarray(got).tobytes() == expected.astype(np.float32).tobytes()
    bad = grads[-1].copy()
    bad[7] = np.inf
    poisoned = frames[:-1] + [ranks[-1].compress(bad, "w")[0]]
    assert np.isnan(comp.decompress_aggregate(poisoned, ctx, 1)).all()


def test_a_subclass_that_decompresses_its_own_way_gets_its_decompress_in_lost():
    class Halving(type(grace_from_params(natural_params("onebit")).compressor)):
        def decompress(self, tensors, ctx):
            return super().decompress(tensors, ctx) / 2

    comp = Halving()
    g = laplace(1000, 22)
    tensors, ctx = comp.compress(g, "w")
    residual = np.empty_like(g)
    comp.lost(g, tensors, ctx, residual)
    assert residual.tobytes() == (g - comp.decompress(tensors, ctx)).tobytes()


@pytest.mark.parametrize("compress_rank", [1, 3])
def test_powersgd_rebuilds_p_times_q_transposed_and_keeps_the_rest_as_its_residual(compress_rank):
    # The product is summed over the rank in order, each product rounded: for rank 1
    # exactly numpy's p @ q.T; the residual is g - that product, bit for bit.
    torch = pytest.importorskip("torch")
    grc = grace_from_params({"compressor": "powersgd", "memory": "powersgd",
                             "communicator": "allreduce", "compress_rank": compress_rank})
    g = torch.from_numpy(laplace(67 * 41, 31).reshape(67, 41))
    result = grc.step(g, "w")
    comp, ctx = grc.compressor, None
    tensors, ctx = comp.compress(g, "probe")
    product = ctx.p[:, :1] * ctx.q[:, 0]
    for k in range(1, compress_rank):
        product = product + ctx.p[:, k:k + 1] * ctx.q[:, k]
    if compress_rank == 1:
        assert product.tobytes() == (ctx.p @ ctx.q.T).tobytes()
    assert comp.decompress(tensors, ctx).numpy().tobytes() == product.tobytes()
    assert result.shape == g.shape and torch.isfinite(result).all()
    # The memory kept the step's residual, g - P·Qᵀ of the step's own factors: the
    # residual plus the result gives the gradient back (one rank: the result is the product).
    residual = grc.memory.residuals["w"]
    assert torch.equal(residual, g - result)
    # A result the caller holds is never written by a later step; one dropped is reused.
    held = grc.step(g, "w")
    kept = held.clone()
    grc.step(g * 2, "w")
    assert torch.equal(held, kept)


def test_powersgd_with_a_nan_gives_a_nan_result_and_keeps_its_memory():
    torch = pytest.importorskip("torch")
    grc = grace_from_params({"compressor": "powersgd", "memory": "powersgd",
                             "communicator": "allreduce", "compress_rank": 2})
    g = torch.from_numpy(laplace(30 * 20, 32).reshape(30, 20))
    grc.step(g, "w")
    residual, q = grc.memory.residuals["w"].clone(), grc.compressor.q_memory["w"].clone()
    bad = g.clone()
    bad[4, 7] = float("nan")
    assert torch.isnan(grc.step(bad, "w")).any()
    assert torch.equal(grc.memory.residuals["w"], residual)
    assert torch.equal(grc.compressor.q_memory["w"], q)


@pytest.mark.filterwarnings("error")
def test_efsignsgd_whose_sum_over_the_learning_rate_overflows_is_inf_without_a_numpy_warning():
    """The aggregate is the sum divided by lr: near float32's largest that is Inf, as in
    torch (the step then finds it non-finite). NumPy's 'overflow encountered in divide'
    RuntimeWarning reached torch users too."""
    torch = pytest.importorskip("torch")
    grc = grace_from_params({"compressor": "efsignsgd", "memory": "none", "communicator": "allgather",
                             "lr": 0.1})
    huge = torch.full((100,), 3e38)
    huge[::2] *= -1
    out = grc.step(huge, "w")
    assert torch.isinf(out).all() and torch.equal(out.sign(), huge.sign())


@pytest.mark.parametrize("communicator", ["allgather", "broadcast"])
def test_efsignsgd_memory_compresses_lr_times_the_gradient_from_the_first_step(communicator):
    """x = e + lr·g with e = 0 at first (SPEC §3): the first step compressed g itself, as
    GRACE's memory does, so the first update was 1/lr times too large and the first
    residual g − D(C(g)). Through the top-k compressor too, whose step is one C call."""
    torch = pytest.importorskip("torch")
    g = torch.tensor([4.0, -2.0, 1.0, -0.5])
    grc = grace_from_params({"compressor": "efsignsgd", "memory": "efsignsgd", "communicator": communicator,
                             "lr": 0.1})
    out = grc.step(g, "w")
    scale = float((0.1 * g).abs().mean())
    assert torch.allclose(out, scale * g.sign() / 0.1)
    assert torch.allclose(grc.memory.residuals["w"], 0.1 * g - scale * g.sign())
    residual = grace_from_params({"compressor": "topk", "memory": "residual", "communicator": communicator,
                                  "compress_ratio": 0.5})
    residual.memory.gamma = 0.1
    assert torch.equal(residual.step(g, "w"), torch.tensor([4.0, -2.0, 0.0, 0.0]) * 0.1)
    assert torch.equal(residual.memory.residuals["w"], torch.tensor([0.0, 0.0, 1.0, -0.5]) * 0.1)


# ---------------------------------------------------------------------------- SPEC §11 fixes
def test_onebit_decodes_each_side_to_its_own_mean():
    # GRACE multiplied by ~mask on a uint8 mask (254/255, not 0/1): it gave 505, 510.
    g = np.array([-2.0, -4.0, 1.0, 3.0, 0.0], dtype=np.float32)
    out, _, _ = roundtrip(grace_from_params({"compressor": "onebit"}).compressor, g)
    np.testing.assert_array_equal(out, np.array([-3, -3, 4 / 3, 4 / 3, 4 / 3], dtype=np.float32))


@pytest.mark.parametrize("levels", [127, 255])  # int8 and int16 levels
def test_qsgd_zero_bucket_decodes_to_zeros(levels):
    # GRACE computed levels as s / 0 * 0 = NaN for a zero bucket, then cast NaN to an
    # integer (undefined behaviour). Tiny values whose squares underflow float32 are the
    # same trap one step removed.
    g = np.concatenate([np.zeros(128), laplace(128, 7), np.full(128, 1e-30), np.zeros(5)]).astype(np.float32)
    comp = grace_from_params({"compressor": "qsgd", "quantum_num": levels, "bucket_size": 128}).compressor
    outs = np.stack([roundtrip(comp, g)[0] for _ in range(200)])
    assert np.isfinite(outs).all()
    assert not outs[:, :128].any() and not outs[:, -5:].any()
    assert np.abs(outs.mean(axis=0)[256:384] - 1e-30).max() < 1e-31  # tiny bucket: unbiased, not lost


def test_adaq_sends_a_side_whose_entries_are_all_equal():
    # Every positive equal: no threshold selects within [0.7t, 1.3t] of them, and the
    # search used to end selecting none, so with a residual memory they never left.
    g = np.array([5.0] * 8 + [-1.0, -2.0], dtype=np.float32)
    grc = grace_from_params(natural_params("adaq"))
    out = grc.step(g, "bias")
    assert np.array_equal(out[:8], g[:8])


# ---------------------------------------------------------------------------- bytes on the wire
def frame(sections):
    """A frame's fixed bytes (docs/architecture.md): 44 header + 4 per section length + CRC."""
    return 44 + 4 * sections + 4


def inceptionn_bytes(x, b=10):
    """The band of each value per quant.h, then the bytes of the blocked section."""
    a = np.abs(x.astype(np.float64))
    q8 = np.floor(a * 2.0 ** (b - 1) + 0.5)
    q16 = np.floor(a * 2.0 ** max(15, b - 1) + 0.5)
    tag1 = (a < 1) & (q8 > 0) & (q8 <= 127)
    tag2 = (a < 1) & (q8 > 127) & (q16 <= 32767)
    tag3 = (a >= 1) | ((q8 > 127) & (q16 > 32767))
    return frame(1) + math.ceil(x.size / 4) + int(tag1.sum()) + 2 * int(tag2.sum()) + 4 * int(tag3.sum())


def sparse_bytes(n, count):
    """A raw sparse frame's bytes (select.h): index lists and values, or where smaller (more
    than one entry in 32 sent) a bitmap of the n entries and the values."""
    return frame(2) + min(8 * count, math.ceil(n / 8) + 4 * count)


N = 10_001  # not a multiple of 8, 4 or 128: every ceil() in the formulas matters
K = int(N * 0.01)

# method -> (extra params, bytes for n = N as a function of the gradient g)
BYTE_FORMULAS = {
    "none": ({}, lambda g: 4 * N),
    "fp16": ({}, lambda g: 2 * N),
    "qsgd": ({}, lambda g: frame(2) + 4 * math.ceil(N / 128) + N),
    "qsgd-int16": ({"quantum_num": 300}, lambda g: frame(2) + 4 * math.ceil(N / 128) + 2 * N),
    "terngrad": ({}, lambda g: frame(2) + 4 + math.ceil(N / 4)),
    "onebit": ({}, lambda g: frame(2) + 8 + math.ceil(N / 8)),
    "signsgd": ({}, lambda g: frame(1) + math.ceil(N / 8)),
    "signum": ({}, lambda g: frame(1) + math.ceil(N / 8)),
    "efsignsgd": ({}, lambda g: frame(2) + 4 + math.ceil(N / 8)),
    "natural": ({}, lambda g: frame(1) + N),
    "8bit": ({}, lambda g: frame(2) + 4 + N),
    "sketch": ({}, lambda g: frame(2) + 4 * 127 + N),
    "randomk": ({}, lambda g: 4 * K),
    "topk": ({}, lambda g: frame(2) + 8 * K),
    # GRACE's default ratio: the bitmap, an eighth of a byte per entry, and the values
    "topk-0.3": ({"compress_ratio": 0.3}, lambda g: frame(2) + math.ceil(N / 8) + 4 * int(N * 0.3)),
    "threshold": ({"threshold": 0.5}, lambda g: sparse_bytes(N, int((np.abs(g) >= 0.5).sum()))),
    "inceptionn": ({}, lambda g: inceptionn_bytes(g)),
    "powersgd": ({"compress_rank": 2}, lambda g: 4 * 2 * (73 + 137)),  # P (73x2) + Q (137x2)
}


@pytest.mark.parametrize("method", sorted(BYTE_FORMULAS))
def test_bytes_on_the_wire_follow_the_formula(method):
    extra, formula = BYTE_FORMULAS[method]
    g = laplace(N, 8, scale=0.3)
    stats = deepreduce.stats.Stats()
    grc = grace_from_params(natural_params(method.split("-")[0], **{"compress_ratio": 0.01, **extra}))
    grc.stats = stats
    if method == "powersgd":
        g = np.resize(g, (73, 137))
    grc.step(g, "w")
    assert stats.totals()["bytes_sent"] == formula(g)
    assert stats.totals()["dense_bytes"] == 4 * g.size


def test_alltoall_counts_both_of_its_phases():
    """Each rank sends the others' chunks (the reduce-scatter), then its reduced chunk
    compressed again (the allgather); the second phase went uncounted. At world size 1 the
    one chunk is the rank's own, kept, so the step sends the reduced chunk's qsgd frame."""
    stats = deepreduce.stats.Stats()
    grc = grace_from_params({"compressor": "qsgd", "communicator": "alltoall"})
    grc.stats = stats
    grc.step(laplace(N, 8), "w")
    assert stats.totals()["bytes_sent"] == frame(2) + 4 * math.ceil(N / 128) + N
    assert grc.link_bytes_per_payload_byte(4) == 1.5  # on the instance too (it took self as P)


def test_allreduce_refuses_framed_payloads_with_a_hint():
    grc = grace_from_params({"compressor": "8bit", "communicator": "allreduce"})
    with pytest.raises(ValueError, match="cannot be summed.*'w'.*allgather"):
        grc.step(laplace(100, 10), "w")


def test_bytes_of_the_variable_size_sparsifiers_stay_in_their_band():
    g = laplace(N, 9)
    for name, fixed, per_entry in [("dgc", frame(2), 8), ("adaq", frame(3) + 8, 4)]:
        stats = deepreduce.stats.Stats()
        grc = grace_from_params(natural_params(name, compress_ratio=0.01))
        grc.stats = stats
        grc.step(g, "w")
        sent = stats.totals()["bytes_sent"] - fixed
        assert sent % per_entry == 0
        count = sent // per_entry
        # dgc: [0.7k, 1.3k] of all entries; adaq: the band of each sign, about k in all
        assert 0.7 * K - 2 <= count <= 1.3 * K + 2, (name, count)


@pytest.mark.parametrize("ratio", [None, 1.0])  # None: GRACE's default, 0.3
def test_adaq_sends_a_dense_selection_as_its_sign_map(ratio):
    """Past about one entry in 16 the 2-bit sign map is smaller than the index lists:
    F2 + 8 + ceil(n/4) bytes, and the step's tensor is still each sign's threshold set at
    its mean (the map carries which entries and which sign, nothing else)."""
    n = 10_003
    g = laplace(n, 12)
    stats = deepreduce.stats.Stats()
    params = natural_params("adaq", memory="none")
    if ratio is not None:
        params["compress_ratio"] = ratio
    grc = grace_from_params(params)
    grc.stats = stats
    out = np.asarray(grc.step(g, "w"))
    assert stats.totals()["bytes_sent"] == frame(2) + 8 + math.ceil(n / 4)
    for side in (out > 0, out < 0):
        sent = g[side]
        assert sent.size > 0 and np.all(np.sign(sent) == np.sign(out[side]))
        assert np.unique(out[side]).size == 1
        assert np.isclose(out[side][0], sent.astype(np.float64).mean(), rtol=1e-6)
        rest = g[~side & (np.sign(g) == np.sign(sent[0]))]
        assert rest.size == 0 or np.abs(rest).max() <= np.abs(sent).min()  # a threshold set
    assert np.count_nonzero(out) == pytest.approx((ratio or 0.3) * n, rel=0.3)  # each side's band


def test_wire_bytes_benchmark_prints_the_formula_volumes(capsys):
    # The benchmark that produces docs/grace.md's table, at a size a test affords.
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "wire_bytes.py"
    spec = importlib.util.spec_from_file_location("wire_bytes", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--numel", "20003", "--ratio", "0.01"])
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[2:]}
    assert set(rows) == set(SPEC_COMPRESSORS) - {"u8bit"} | COMPARISON
    n, k = 20003, 200
    assert int(rows["none"][1].replace(",", "")) == 4 * n
    assert int(rows["signsgd"][1].replace(",", "")) == frame(1) + math.ceil(n / 8)
    assert int(rows["topk"][1].replace(",", "")) == frame(2) + 8 * k
    assert float(rows["signsgd"][4]) == pytest.approx(n / 1e6, abs=1e-3)  # GRACE: a uint8 per sign
