"""auto_off on 2 real gloo ranks: the path it picks follows the cost model, and every rank
picks the same path (the collectives would not match otherwise)."""
import numpy as np
import pytest

pytest.importorskip("torch")

import distributed

TOPK = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.01,
        "auto_off": True}


def _paths(rank, world, bandwidth):
    from deepreduce import grace_from_params
    grc = grace_from_params(dict(TOPK, bandwidth=bandwidth))
    rng = np.random.default_rng(rank)
    chosen = []
    for _ in range(6):
        out = grc.step(rng.standard_normal(200_000).astype(np.float32), "big")
        chosen.append("dense" if np.count_nonzero(out) > 10_000 else "sparse")
    return chosen


@pytest.mark.slow
def test_auto_off_follows_the_link_and_ranks_agree():
    slow_link = distributed.run(_paths, 2, 1e5)   # 100 kB/s: 800 kB dense costs seconds
    fast_link = distributed.run(_paths, 2, 1e13)  # a link so fast the codec time dominates
    assert slow_link[0] == slow_link[1] == ["sparse"] * 6
    assert fast_link[0] == fast_link[1]
    assert fast_link[0][:2] == ["sparse", "sparse"] and fast_link[0][2:] == ["dense"] * 4


def _schedule(auto_off, compressed_seconds, dense_seconds, steps):
    """The paths auto_off picks for one tensor over ``steps`` steps when every compressed
    step takes ``compressed_seconds`` and every dense one ``dense_seconds`` (a list of
    'C'/'D'), and the cycle lengths it went through."""
    from deepreduce.transports.local import LocalTransport
    transport, paths = LocalTransport(), []
    for _ in range(steps):
        if auto_off.wants_dense("w", transport, 10_000):
            paths.append("D")
            auto_off.observe_dense("w", dense_seconds)
        else:
            paths.append("C")
            auto_off.observe_compressed("w", compressed_seconds, compressed_seconds / 2, 4000)
    return "".join(paths)


def test_auto_off_samples_both_paths_equally_and_alternately_when_they_are_close():
    from deepreduce.autooff import AutoOff
    auto_off = AutoOff(warmup=3, interval=20)
    # 5% apart: no early decision, and not the 10% margin compression needs.
    assert _schedule(auto_off, 1.05e-3, 1.0e-3, 8) == "CDCDCD" + "DD"
    cost = auto_off.costs["w"]
    assert cost.compressed_seconds == 1.05e-3 and cost.dense_seconds == 1.0e-3


def test_auto_off_rechecks_after_one_sample_when_one_path_is_clearly_cheaper():
    from deepreduce.autooff import AutoOff
    # The first cycle takes every sample (first steps pay one-time costs); a re-check
    # samples the other path once and decides: dense early at 2x, compression early
    # only at 4x (a wrong "compress" is the costlier mistake).
    assert _schedule(AutoOff(warmup=3, interval=20), 2e-3, 1e-3, 40) == "CDCDCD" + "D" * 14 + "C" + "D" * 19
    assert _schedule(AutoOff(warmup=3, interval=20), 1e-3, 4e-3, 40) == "CDCDCD" + "C" * 14 + "D" + "C" * 19
    # 3x: not clear enough to compress early; the re-check takes all three dense samples.
    assert _schedule(AutoOff(warmup=3, interval=20), 1e-3, 3e-3, 40) == "CDCDCD" + "C" * 14 + "DDD" + "C" * 17


def test_a_confirmed_decision_is_rechecked_ever_more_rarely_sampling_only_the_other_path():
    from deepreduce.autooff import AutoOff
    auto_off = AutoOff(warmup=2, interval=10)
    paths = _schedule(auto_off, 3e-3, 1e-3, 10 + 20 + 40 + 80 + 80)
    # Cycle 1 samples both; later ones only compression (the dense steps time the dense
    # path), and each confirmation doubles the cycle up to 8 * interval.
    assert paths == ("CDCD" + "D" * 6) + ("C" + "D" * 19) + ("C" + "D" * 39) + ("C" + "D" * 79) * 2
    # The link slows down. The next look still compares with dense steps timed before
    # (keeps dense for its 80 steps, which time the slower link); the one after that
    # switches, early, and its cycle is back to 10 steps; then compression is confirmed.
    paths = _schedule(auto_off, 1e-3, 5e-3, 80 + 10 + 20)
    assert paths == ("CC" + "D" * 78) + ("C" + "C" * 9) + ("D" + "C" * 19)


def test_auto_off_sends_small_tensors_dense_without_measuring():
    from deepreduce import grace_from_params
    grc = grace_from_params(dict(TOPK, auto_off_min_numel=2000))
    g = np.random.default_rng(0).standard_normal(1999).astype(np.float32)
    assert all(np.count_nonzero(grc.step(g, "bias")) == 1999 for _ in range(3))
    assert "bias" not in grc.auto_off.costs
    with pytest.raises(ValueError, match="auto_off_interval > 2"):
        grace_from_params(dict(TOPK, auto_off_warmup=3, auto_off_interval=6))


def test_auto_off_rejects_a_bad_bandwidth():
    from deepreduce import grace_from_params
    with pytest.raises(ValueError, match="bandwidth"):
        grace_from_params(dict(TOPK, bandwidth=-1))
    for bad in (0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match=rf"^bandwidth must be a finite number > 0, got {bad!r}$"):
            grace_from_params(dict(TOPK, bandwidth=bad))
    with pytest.raises(ValueError, match="bandwidth must be a finite number, got one too large"):  # OverflowError
        grace_from_params(dict(TOPK, bandwidth=10 ** 400))
    with pytest.raises(TypeError, match="bandwidth must be a number"):
        grace_from_params(dict(TOPK, bandwidth="fast"))


@pytest.mark.parametrize("memory", ["residual", "dgc", "efsignsgd"])
def test_dense_steps_leave_no_memory_behind(memory):
    """A dense step sends the compensated tensor exactly: the memory must hold nothing for
    it afterwards, so a later compressed step does not re-add an old residual."""
    from deepreduce import grace_from_params
    grc = grace_from_params(dict(TOPK, memory=memory, bandwidth=1e13, auto_off_min_numel=0))  # fast link: dense after warm-up
    g = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    outs = [grc.step(g, "w") for _ in range(4)]
    state = getattr(grc.memory, "residuals", None) or getattr(grc.memory, "gradients", {})
    assert "w" not in state
    # the first dense step sends the gradient plus everything kept back so far
    assert np.count_nonzero(outs[2]) == 1000


@pytest.mark.parametrize("compressor", ["signsgd", "signum", "efsignsgd"])
def test_compressors_that_vote_or_sum_refuse_auto_off(compressor):
    """The dense path averages: with a vote or a sum as the aggregate, the update's scale
    jumped by orders of magnitude at every switch (signsgd 1 against 0.0006)."""
    from deepreduce import grace_from_params
    with pytest.raises(ValueError, match="auto_off sends a tensor dense as an average"):
        grace_from_params({"compressor": compressor, "communicator": "allgather", "auto_off": True})


def test_the_bandwidth_model_charges_each_communicator_its_own_transfer():
    """Every compressed exchange was charged as an allgather, (P - 1) times its payload:
    fp16 over a ring allreduce (2(P - 1)/P) went dense at P = 4 where it halves the time."""
    from deepreduce.autooff import AutoOff
    from deepreduce.registry import COMMUNICATORS, lookup

    class FourRanks:  # the agreement's allreduce of a world of four identical ranks
        size = 4

        def allreduce(self, array, name):
            return array * self.size

    factors = {name: lookup(COMMUNICATORS, "communicator", name).link_bytes_per_payload_byte(4)
               for name in ("allgather", "broadcast", "allreduce", "alltoall")}
    assert factors == {"allgather": 3, "broadcast": 3, "allreduce": 1.5, "alltoall": 1.5}
    n, bandwidth = 1_000_000, 1.25e8  # 1 Gbit/s; fp16 payload of 2n bytes, 1 ms of codec
    for factor, dense in ((factors["allreduce"], False), (factors["allgather"], True)):
        auto_off = AutoOff(bandwidth=bandwidth)
        assert not auto_off.wants_dense("w", FourRanks(), n)  # the first sample is compressed
        auto_off.observe_compressed("w", 0.03, 1e-3, factor * 2 * n)
        auto_off._decide(auto_off.costs["w"], FourRanks(), "w", n)
        assert auto_off.costs["w"].dense is dense  # 25 ms against dense's 48 ms; 49 ms against 48


def _dense_step_with_an_overflow(rank, world):
    """topk + residual with auto_off forced dense after warm-up (a link so fast the codec
    dominates); rank 1's gradient overflows at the first dense step. Returns, per step,
    whether the result was finite and this rank's residual's norm after it."""
    from deepreduce import grace_from_params
    grc = grace_from_params(dict(TOPK, bandwidth=1e13, auto_off_min_numel=0))
    rng = np.random.default_rng(rank)
    seen = []
    for step in range(4):
        g = rng.standard_normal(1000).astype(np.float32)
        if step == 2 and rank == 1:
            g[0] = np.inf
        out = grc.step(g, "w")
        residual = grc.memory.residuals.get("w")
        seen.append((bool(np.isfinite(out).all()), 0.0 if residual is None else float(np.linalg.norm(residual))))
    return seen


@pytest.mark.slow
def test_a_skipped_dense_step_keeps_every_ranks_residual():
    """A rank whose own tensor was finite dropped its residual before the dense allreduce,
    although the sum was not finite and the step was skipped: the error feedback of the
    steps before was lost."""
    for seen in distributed.run(_dense_step_with_an_overflow, 2):
        assert [finite for finite, _ in seen] == [True, True, False, True]
        assert seen[1][1] > 0 and seen[2][1] == seen[1][1]  # kept through the skipped step
        assert seen[3][1] == 0.0  # the next dense step sent it
