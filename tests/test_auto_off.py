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


def test_auto_off_samples_both_paths_equally_when_no_bandwidth_is_given():
    from deepreduce import grace_from_params
    grc = grace_from_params(dict(TOPK, auto_off_warmup=3))
    g = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    paths = ["dense" if np.count_nonzero(grc.step(g, "w")) > 1000 else "sparse" for _ in range(6)]
    assert paths == ["sparse"] * 3 + ["dense"] * 3
    cost = grc.auto_off.costs["w"]
    assert cost.compressed_seconds > 0 and cost.dense_seconds > 0


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
