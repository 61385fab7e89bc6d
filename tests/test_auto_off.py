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


def test_auto_off_measures_the_dense_path_when_no_bandwidth_is_given():
    from deepreduce import grace_from_params
    grc = grace_from_params(dict(TOPK))
    g = np.ones(1000, dtype=np.float32)
    for _ in range(4):
        grc.step(g, "w")
    cost = grc.auto_off.costs["w"]
    assert cost.compressed_seconds > 0 and cost.dense_seconds is not None


def test_auto_off_rejects_a_bad_bandwidth():
    from deepreduce import grace_from_params
    with pytest.raises(ValueError, match="bandwidth"):
        grace_from_params(dict(TOPK, bandwidth=-1))


@pytest.mark.parametrize("memory", ["residual", "dgc", "efsignsgd"])
def test_dense_steps_leave_no_memory_behind(memory):
    """A dense step sends the compensated tensor exactly: the memory must hold nothing for
    it afterwards, so a later compressed step does not re-add an old residual."""
    from deepreduce import grace_from_params
    grc = grace_from_params(dict(TOPK, memory=memory, bandwidth=1e13))  # fast link: dense after warm-up
    g = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    outs = [grc.step(g, "w") for _ in range(4)]
    state = getattr(grc.memory, "residuals", None) or getattr(grc.memory, "gradients", {})
    assert "w" not in state
    # the first dense step sends the gradient plus everything kept back so far
    assert np.count_nonzero(outs[2]) == 1000
