"""Every GRACE method on real gloo ranks. Spawning is the expensive part, so there are
two spawns for the whole file, each looping over its cases inside the workers: 2 ranks
train the GRACE-style script (tests/grace_loop.py, unchanged) once per method, and 3
ranks run the exact and statistical checks that need more than one rank. Each test
below reads its case from those results.

Related tests elsewhere: allgather of different sizes per rank on CPU and all-empty
payloads (test_foundation.py::test_threshold_that_selects_nothing_on_one_rank),
broadcast built by the helper without a rank
(test_foundation.py::test_broadcast_communicator_matches_allgather)."""
import traceback

import numpy as np
import pytest

from deepreduce.pairings import PAIRINGS, natural_params

torch = pytest.importorskip("torch")

import distributed  # noqa: E402
import grace_loop  # noqa: E402

pytestmark = pytest.mark.slow

# ---------------------------------------------------------------------------- 2 ranks: training
# Every compressor with its natural memory and communicator at GRACE's defaults; the
# quantizers GRACE's alltoall served also through it; dgc with clipping on (GRACE's
# clipping crashed). The sign methods step every weight by ±lr whatever the gradient's
# size, so they get the smaller lr any signSGD user would give them.
TRAINING = {name: (natural_params(name), 0.1) for name in PAIRINGS}
TRAINING["dgc"] = (natural_params("dgc", gradient_clipping=True), 0.1)
TRAINING["signsgd"] = (natural_params("signsgd"), 0.01)
TRAINING["signum"] = (natural_params("signum"), 0.01)
for _name in ("qsgd", "terngrad", "natural"):
    TRAINING[f"{_name}/alltoall"] = (natural_params(_name, communicator="alltoall"), 0.1)


def _train_every_method(rank, world_size):
    import deepreduce
    results = {}
    for case, (params, lr) in TRAINING.items():
        deepreduce.stats.GLOBAL.reset()
        flat, losses, accuracy = grace_loop.train(rank, world_size, params, lr=lr)
        results[case] = (flat, losses, accuracy, deepreduce.stats.GLOBAL.totals()["relative_volume"])
    return results


@pytest.fixture(scope="module")
def trained():
    return distributed.run(_train_every_method, 2, timeout=600, pg_timeout=60)


@pytest.mark.parametrize("case", list(TRAINING))
def test_grace_script_trains_with_every_method(trained, case):
    flat0, losses, accuracy, volume = trained[0][case]
    flat1 = trained[1][case][0]
    # Stochastic methods too: every rank decompresses the same gathered payloads.
    assert flat0.tobytes() == flat1.tobytes()
    assert losses[-1] < 0.2 * losses[0], losses
    assert accuracy >= 0.95
    if case == "none":
        assert volume == 1.0
    else:
        assert 0 < volume < 1.0  # it compressed; the accounting saw every step


# ---------------------------------------------------------------------------- 3 ranks: exact checks
WORLD = 3


def grads(n, seed, rank, scale=1.0):
    return np.random.default_rng(seed * 100 + rank).standard_normal(n).astype(np.float32) * scale


def _signsgd_vote(rank):
    from deepreduce import grace_from_params
    g = grads(300, 1, rank)
    g[::7] = 0.0  # zero counts as +1
    return grace_from_params(natural_params("signsgd")).step(torch.from_numpy(g), "w").numpy()


def _randomk_allreduce_and_allgather(rank):
    from deepreduce import grace_from_params
    communicators = ("allreduce", "allgather")
    grcs = [grace_from_params({"compressor": "randomk", "compress_ratio": 0.1, "communicator": c})
            for c in communicators]
    # two steps: the second draws other indices, again the same on every rank
    return [[grc.step(torch.from_numpy(grads(1000, 2 + step, rank)), "w").numpy() for grc in grcs]
            for step in range(2)]


def rank_one(rank, shape, rank_r):
    """Gradient (rank+1)·A with A of matrix rank rank_r, the same A on every rank."""
    gen = np.random.default_rng(7)
    a = gen.standard_normal((shape[0], rank_r)) @ gen.standard_normal((rank_r, shape[1]))
    return ((rank + 1) * a).astype(np.float32)


def _powersgd_mean(rank):
    from deepreduce import grace_from_params
    out = {}
    for r in (1, 2):
        grc = grace_from_params(natural_params("powersgd", compress_rank=r))
        g = torch.from_numpy(rank_one(rank, (12, 9), r))
        bias = torch.from_numpy(grads(5, 4, rank))
        out[r] = [grc.step(g, "w").numpy() for _ in range(2)] + [grc.step(bias, "b").numpy()]
    return out


def _alltoall(rank, steps=20):
    from deepreduce import grace_from_params
    g = torch.from_numpy(grads(3000, 5, rank))  # 3000 = chunks of 1024, 1024, 952 at bucket 128
    out = {}
    for name in ("qsgd", "terngrad", "natural"):
        grc = grace_from_params(natural_params(name, communicator="alltoall"))
        out[name] = np.stack([grc.step(g, "w").numpy() for _ in range(steps)])
    return out


def _alltoall_bytes(rank):
    """Bytes recorded per step: 'none' over alltoall at 3 ranks, and qsgd with auto_off
    (whose first compressed step failed: the alltoall's link factor took self as P)."""
    import deepreduce
    from deepreduce import grace_from_params
    recorded = {}
    for label, params in (("none", {"compressor": "none", "communicator": "alltoall"}),
                          ("qsgd auto_off", {"compressor": "qsgd", "communicator": "alltoall",
                                             "auto_off": True, "auto_off_min_numel": 100})):
        grc = grace_from_params(params)
        grc.stats = deepreduce.stats.Stats()
        grc.step(torch.from_numpy(grads(3000, 5, rank)), "w")
        recorded[label] = grc.stats.totals()
    return recorded


def _fp16_near_its_largest(rank):
    from deepreduce import grace_from_params
    grc = grace_from_params({"compressor": "fp16", "communicator": "allreduce"})
    return grc.step(torch.full((4,), 40000.0 + rank), "w").numpy()


def _damaged_frame(rank):
    """Rank 2's top-k frame has a byte flipped on its way: every rank's error."""
    from deepreduce import FrameError, grace_from_params
    grc = grace_from_params({"compressor": "topk", "memory": "none", "communicator": "allgather",
                             "compress_ratio": 0.1})
    compress = grc.compressor.compress

    def damaging(tensor, name):
        (frame,), ctx = compress(tensor, name)
        if rank == 2:
            frame = frame.clone()
            frame[frame.numel() // 2] ^= 0x40
        return [frame], ctx
    grc.compressor.compress = damaging
    try:
        grc.step(torch.from_numpy(grads(300, 7, rank)), "w")
    except FrameError as e:
        return str(e)
    return "no error"


def _dgc_clipping(rank):
    from deepreduce import grace_from_params
    # Sending every entry isolates the memory: the result is the mean of the clipped
    # gradients. Rank 0 has a spike that the global norm clips.
    g = grads(100, 6, rank)
    if rank == 0:
        g[3] = 50.0
    grc = grace_from_params({"compressor": "topk", "compress_ratio": 1.0, "memory": "dgc",
                             "gradient_clipping": True, "communicator": "allgather"})
    return grc.step(torch.from_numpy(g), "w").numpy()


CASES = {"signsgd": _signsgd_vote, "randomk": _randomk_allreduce_and_allgather, "powersgd": _powersgd_mean,
         "alltoall": _alltoall, "alltoall_bytes": _alltoall_bytes, "fp16": _fp16_near_its_largest, "damaged": _damaged_frame,
         "dgc_clipping": _dgc_clipping}


def _three_rank_cases(rank, world_size):
    results = {}
    for case, fn in CASES.items():
        try:
            results[case] = ("ok", fn(rank))
        except Exception:  # keep going: the other cases' tests still get their results
            results[case] = ("error", traceback.format_exc())
    return results


@pytest.fixture(scope="module")
def three_ranks():
    per_rank = distributed.run(_three_rank_cases, WORLD, timeout=300, pg_timeout=60)

    def case(name):
        outs = []
        for rank, results in enumerate(per_rank):
            status, value = results[name]
            assert status == "ok", f"rank {rank}:\n{value}"
            outs.append(value)
        return outs
    return case


def test_signsgd_is_a_majority_vote(three_ranks):
    outs = three_ranks("signsgd")
    signs = [np.where(grads(300, 1, r) * (np.arange(300) % 7 != 0) >= 0, 1, -1) for r in range(WORLD)]
    expected = np.where(sum(signs) >= 0, 1.0, -1.0).astype(np.float32)
    assert all((s != expected).any() for s in signs)  # the vote overrules every rank somewhere
    for out in outs:
        assert np.array_equal(out, expected)


def test_randomk_allreduce_equals_allgather(three_ranks):
    outs = three_ranks("randomk")
    for step in range(2):
        mean = sum(grads(1000, 2 + step, r) for r in range(WORLD)) / WORLD
        via_allreduce, via_allgather = outs[0][step]
        kept = via_allreduce != 0
        assert kept.sum() == 100
        # equal up to the order of a 3-term float sum
        tol = dict(rtol=1e-6, atol=1e-6 * float(np.abs(mean).max()))
        np.testing.assert_allclose(via_allreduce[kept], mean[kept], **tol)
        np.testing.assert_allclose(via_allgather, via_allreduce, **tol)
        assert np.array_equal(via_allgather != 0, kept)
        for other in outs[1:]:  # same indices and values on every rank
            assert np.array_equal(other[step][0], via_allreduce)
    assert not np.array_equal(outs[0][0][0] != 0, outs[0][1][0] != 0)  # indices change per step


@pytest.mark.parametrize("compress_rank", [1, 2])
def test_powersgd_averages_by_the_true_world_size(three_ranks, compress_rank):
    # The mean gradient 2·A has matrix rank compress_rank, so one power-iteration step
    # recovers it exactly; GRACE divided by world_size=1 and returned the sum, 6·A.
    mean = sum(rank_one(r, (12, 9), compress_rank) for r in range(WORLD)) / WORLD
    bias_mean = sum(grads(5, 4, r) for r in range(WORLD)) / WORLD
    for out in three_ranks("powersgd"):
        first, second, bias = out[compress_rank]
        np.testing.assert_allclose(first, mean, rtol=1e-4, atol=1e-4 * np.abs(mean).max())
        np.testing.assert_allclose(second, mean, rtol=1e-4, atol=1e-4 * np.abs(mean).max())  # warm start, memory
        np.testing.assert_allclose(bias, bias_mean, rtol=1e-6)  # vectors go dense


def test_alltoall_counts_the_chunks_that_leave_the_rank(three_ranks):
    """A rank keeps its own chunk; it was counted as sent, so 'none' read 1.33x dense at
    P = 3 (1.5x at 2). Sent: the two other chunks and the reduced one, the tensor's bytes."""
    for totals in three_ranks("alltoall_bytes"):
        assert totals["none"]["bytes_sent"] == totals["none"]["dense_bytes"] == 4 * 3000
        qsgd = totals["qsgd auto_off"]
        # 3000 = chunks of 1024, 1024, 952 at bucket 128: two frames out of three, and the
        # reduced chunk's frame: about one qsgd frame of the tensor (a byte and 4/128 of
        # a float per element), never three halves of it
        assert 3000 * (1 + 4 / 128) < qsgd["bytes_sent"] < 3000 * (1 + 4 / 128) + 3 * 128


def test_a_damaged_frame_is_named_by_its_tensor_and_rank(three_ranks):
    # It read "TopKCompressor payload: checksum mismatch", naming neither.
    for message in three_ranks("damaged"):
        assert message.startswith("allgather of tensor 'w': rank 2's payload: TopKCompressor payload: "), message


def test_fp16_allreduce_of_values_whose_sum_passes_65504_gives_their_mean(three_ranks):
    """Each rank's 40000 fits float16, and so does the mean; their float16 sum, 120003,
    does not: the step returned Inf (with AMP, GradScaler skipped steps at a scale three
    times smaller than it needed to)."""
    for out in three_ranks("fp16"):
        np.testing.assert_allclose(out, np.full(4, 40001.0), rtol=2e-3)


# Relative L2 error of one alltoall step against the mean gradient (two quantizations:
# each rank's chunk, then the reduced chunk). The bounds are the methods' variance bounds
# for these gradients with room: qsgd (s=127, B=128) E||Q(v)-v||^2 <= B/s^2 ||v||^2
# gives about 0.13, natural's 1/8 ||v||^2 about 0.5; terngrad's level is max|g|, so one
# step is noisier than the signal (measured 0.05 / 1.7 / 0.42: docs/grace.md).
ALLTOALL_ONE_STEP = {"qsgd": 0.13, "terngrad": 2.5, "natural": 0.6}


@pytest.mark.parametrize("method", sorted(ALLTOALL_ONE_STEP))
def test_alltoall_quantizers_give_the_mean_gradient(three_ranks, method):
    outs = [out[method] for out in three_ranks("alltoall")]
    mean = sum(grads(3000, 5, r) for r in range(WORLD)) / WORLD
    for other in outs[1:]:
        assert np.array_equal(other, outs[0])  # every rank rebuilds the same chunks
    relative = lambda v: np.linalg.norm(v - mean) / np.linalg.norm(mean)  # noqa: E731
    per_step = np.array([relative(step) for step in outs[0]])
    assert per_step.max() <= ALLTOALL_ONE_STEP[method]
    # Unbiased end to end: each step draws new noise, so the mean of the steps closes in
    # as 1/sqrt(steps); a bias as large as the noise would stop it. (terngrad's clip at
    # 2.5 sigma is a bias, but a small one next to its noise.)
    rms = np.sqrt((per_step ** 2).mean())
    assert relative(outs[0].mean(axis=0)) <= 1.5 * rms / np.sqrt(len(per_step))


def test_dgc_memory_clips_by_the_global_norm(three_ranks):
    gs = [grads(100, 6, r) for r in range(WORLD)]
    gs[0][3] = 50.0
    limit = np.sqrt(sum(float(g.astype(np.float64) @ g) for g in gs) / WORLD)
    assert limit < 50  # the spike is clipped
    expected = sum(np.clip(g, -limit, limit) for g in gs) / WORLD
    for out in three_ranks("dgc_clipping"):
        np.testing.assert_allclose(out, expected, rtol=1e-5)


# ---------------------------------------------------------------------------- 2 ranks: mismatch
def _step_this_ranks_size(rank, world_size, params):
    import torch

    from deepreduce import CommunicationError, deepreduce_from_params
    grc = deepreduce_from_params(dict(params))
    try:
        grc.step(torch.randn(1000 * (rank + 1)), "w")
    except CommunicationError as e:
        return str(e)
    return "stepped"


@pytest.mark.parametrize("params", [
    {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.1},
    {"compressor": "qsgd", "communicator": "allgather"},
    {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.1,
     "deepreduce": "index", "index": "bloom"},
    {"compressor": "topk", "memory": "residual", "communicator": "broadcast", "compress_ratio": 0.1},
    {"compressor": "terngrad", "communicator": "alltoall"},
    {"compressor": "none", "communicator": "allgather"},
    {"compressor": "fp16", "communicator": "broadcast"},
], ids=["topk", "qsgd", "topk+bloom", "broadcast", "alltoall", "none", "fp16"])
def test_ranks_stepping_tensors_of_different_sizes_under_one_name_are_told_so(params):
    """Each rank's frame is sound but for another tensor: the communicator says that the
    element counts differ, as the allreduce does, where every rank said only 'inconsistent
    frame header field or section length', as for a damaged frame. (The alltoall's are its
    chunks': tensors of 1,000 and 2,000 elements in two chunks each.) none's and fp16's
    payloads are no frames but the values themselves: their sizes are the counts."""
    expected = {"alltoall": ("alltoall of tensor 'w' (its chunk {rank}): element counts differ across ranks "
                              "[500, 1000]")}.get(params["communicator"],
                                                  f"{params['communicator']} of tensor 'w': element counts differ "
                                                  "across ranks [1000, 2000]")
    for rank, message in enumerate(distributed.run(_step_this_ranks_size, 2, params)):
        assert message.startswith(expected.format(rank=rank))
