"""The foundation through its public interfaces: params, the array edge, frames, and the
GRACE step on real gloo processes."""
import subprocess
import sys

import numpy as np
import pytest

import deepreduce
from deepreduce import FrameError, grace_from_params

import distributed

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------------------- params
def test_defaults_are_graces():
    assert deepreduce.DEFAULTS["compress_ratio"] == 0.3
    assert deepreduce.DEFAULTS["bucket_size"] == 128
    assert deepreduce.DEFAULTS["quantum_num"] == 127
    grc = grace_from_params({})
    assert type(grc.compressor).__name__ == "NoneCompressor"
    assert type(grc.memory).__name__ == "NoneMemory"
    assert type(grc).__name__ == "Allreduce"


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid names: .*topk"):
        grace_from_params({"compressor": "topq"})
    with pytest.raises(ValueError, match="unknown memory"):
        grace_from_params({"memory": "nope"})


def test_public_attributes_are_assignable():
    grc = grace_from_params({"compressor": "topk", "compress_ratio": 0.5, "world_size": 1})
    assert grc.world_size == 1
    from deepreduce.compressors.none import NoneCompressor
    grc.compressor = NoneCompressor()
    out = grc.step(np.arange(4, dtype=np.float32), "x")
    assert np.array_equal(out, np.arange(4, dtype=np.float32))


def test_import_needs_neither_torch_nor_mpi4py():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"      # makes 'import torch' fail
        "sys.modules['mpi4py'] = None\n"
        "import numpy as np, deepreduce\n"
        "grc = deepreduce.grace_from_params({'compressor': 'topk', 'memory': 'residual', "
        "'communicator': 'allgather', 'compress_ratio': 0.25})\n"
        "out = grc.step(np.array([1, -5, 2, 0.5], dtype=np.float32), 'w')\n"
        "assert out.tolist() == [0, -5, 0, 0], out\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_torch_subpackages_are_reached_from_the_top_package():
    """api.md: everything is importable from ``deepreduce``; ``deepreduce.train.run`` was an
    AttributeError after ``import deepreduce`` (the subpackage had to be imported by name)."""
    code = ("import sys, deepreduce\n"
            "assert 'deepreduce.train' not in sys.modules\n"
            "print(deepreduce.train.run.__name__, deepreduce.torch.ddp.__name__, deepreduce.fl.__name__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["run", "deepreduce.torch.ddp", "deepreduce.fl"]


# ---------------------------------------------------------------------------- the edge
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_torch_tensors_keep_type_dtype_and_shape(dtype):
    grc = grace_from_params({"compressor": "topk", "compress_ratio": 0.5, "communicator": "allgather"})
    g = torch.tensor([[1.0, -4.0], [0.5, 3.0]], dtype=dtype)
    out = grc.step(g, "w")
    assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.shape == g.shape
    assert out.float().tolist() == [[0.0, -4.0], [0.0, 3.0]]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_numpy_arrays_keep_dtype_and_shape(dtype):
    grc = grace_from_params({"compressor": "none"})
    g = np.arange(6, dtype=dtype).reshape(2, 3)
    out = grc.step(g, "w")
    assert isinstance(out, np.ndarray) and out.dtype == dtype and out.shape == (2, 3)
    assert np.array_equal(out, g)


def test_float32_cpu_tensor_crosses_without_copy():
    g = torch.arange(8, dtype=torch.float32)
    flat, _ = deepreduce.edge.to_core(g)
    flat[0] = 42.0
    assert g[0].item() == 42.0


def test_bad_inputs_say_what_is_wrong():
    grc = grace_from_params({"compressor": "topk"})
    with pytest.raises(TypeError, match="floating-point"):
        grc.step(np.arange(4), "w")
    with pytest.raises(TypeError, match="torch tensor or a NumPy array"):
        grc.step([1.0, 2.0], "w")
    with pytest.raises(ValueError, match="compress_ratio"):
        grace_from_params({"compressor": "topk", "compress_ratio": 0})


# ---------------------------------------------------------------------------- frames
@pytest.mark.parametrize("ratio", [0.01, 0.1])  # the index lists; the bitmap (select.h)
def test_every_single_byte_change_of_a_frame_is_refused(ratio):
    comp = grace_from_params({"compressor": "topk", "compress_ratio": ratio}).compressor
    g = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    (frame,), ctx = comp.compress(g, "w")
    k = int(200 * ratio)
    assert frame.size == 56 + min(8 * k, 25 + 4 * k)
    assert np.array_equal(comp.decompress([frame], ctx) != 0, np.isin(np.arange(200), np.argsort(-np.abs(g))[:k]))
    for pos in range(frame.size):
        bad = frame.copy()
        bad[pos] ^= 0xA5
        with pytest.raises(FrameError) as err:
            comp.decompress([bad], ctx)
        assert "payload" in str(err.value)
    with pytest.raises(FrameError, match="truncated"):
        comp.decompress([frame[:-1]], ctx)
    with pytest.raises(FrameError, match="uint8"):
        comp.decompress([frame[:frame.size // 4 * 4].view(np.float32)], ctx)


def test_frame_for_another_tensor_is_refused():
    comp = grace_from_params({"compressor": "topk", "compress_ratio": 0.1}).compressor
    (frame,), _ = comp.compress(np.ones(100, dtype=np.float32), "a")
    _, other_ctx = comp.compress(np.ones(50, dtype=np.float32), "b")
    with pytest.raises(FrameError, match="inconsistent"):
        comp.decompress([frame], other_ctx)


# ---------------------------------------------------------------------------- local semantics
def test_topk_with_residual_feeds_back_what_was_dropped():
    grc = grace_from_params({"compressor": "topk", "memory": "residual", "communicator": "allgather",
                             "compress_ratio": 0.25})
    g = np.array([4.0, 1.0, 2.0, 3.0], dtype=np.float32)
    assert grc.step(g, "w").tolist() == [4, 0, 0, 0]
    # residual [0, 1, 2, 3] + g -> [4, 2, 4, 6]: the 6 goes out now
    assert grc.step(g, "w").tolist() == [0, 0, 0, 6]


def test_randomk_touches_no_global_rng():
    torch.manual_seed(1)
    np.random.seed(1)
    torch_state, np_state = torch.get_rng_state(), np.random.get_state()[1].copy()
    grc = grace_from_params({"compressor": "randomk", "compress_ratio": 0.3})
    a = grc.step(torch.arange(1, 101, dtype=torch.float32), "w")  # no zero entry: 30 drawn, 30 nonzero
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert np.array_equal(np.random.get_state()[1], np_state)
    assert int((a != 0).sum()) == 30
    b = grace_from_params({"compressor": "randomk", "compress_ratio": 0.3}).step(
        torch.arange(1, 101, dtype=torch.float32), "w")
    assert torch.equal(a, b)  # same (name, step): same indices in a fresh process or rank


def test_stats_count_bytes_against_dense():
    stats = deepreduce.stats.Stats()
    grc = grace_from_params({"compressor": "topk", "compress_ratio": 0.01, "communicator": "allgather"})
    grc.stats = stats
    grc.step(np.ones(10_000, dtype=np.float32), "w")
    totals = stats.totals()
    assert totals["dense_bytes"] == 40_000
    assert totals["bytes_sent"] == 100 * 8 + 52 + 4
    assert totals["relative_volume"] < 0.03


# ---------------------------------------------------------------------------- real gloo ranks
def _exchange(rank, world, params, grads):
    grc = grace_from_params(params)
    return grc.step(torch.from_numpy(grads[rank]), "layer.weight").numpy()


@pytest.mark.slow
def test_none_allreduce_is_the_mean_over_3_ranks():
    grads = [np.random.default_rng(r).standard_normal((5, 7)).astype(np.float32) for r in range(3)]
    outs = distributed.run(_exchange, 3, {"compressor": "none"}, grads)
    expected = (grads[0] + grads[1] + grads[2]) / 3
    for out in outs:
        np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.slow
def test_topk_allgather_is_the_sum_of_sparse_tensors_over_world():
    grads = [np.random.default_rng(10 + r).standard_normal(400).astype(np.float32) for r in range(3)]
    params = {"compressor": "topk", "communicator": "allgather", "compress_ratio": 0.05}
    outs = distributed.run(_exchange, 3, params, grads)
    expected = np.zeros(400, dtype=np.float32)
    for g in grads:
        top = np.argsort(-np.abs(g), kind="stable")[:20]
        expected[top] += g[top]
    expected /= 3
    for out in outs:
        np.testing.assert_array_equal(out, expected)


@pytest.mark.slow
def test_threshold_that_selects_nothing_on_one_rank():
    grads = [np.full(50, 0.001, dtype=np.float32), np.linspace(-1, 1, 50).astype(np.float32)]
    params = {"compressor": "threshold", "communicator": "allgather", "threshold": 0.5}
    outs = distributed.run(_exchange, 2, params, grads, timeout=60)
    expected = np.where(np.abs(grads[1]) >= 0.5, grads[1], 0) / 2
    for out in outs:
        np.testing.assert_array_equal(out, expected.astype(np.float32))
    # nothing selected anywhere: every payload is empty, still no hang
    outs = distributed.run(_exchange, 2, params, [grads[0], grads[0]], timeout=60)
    assert all(not out.any() for out in outs)


@pytest.mark.slow
def test_broadcast_communicator_matches_allgather():
    grads = [np.random.default_rng(20 + r).standard_normal(64).astype(np.float32) for r in range(3)]
    base = {"compressor": "threshold", "threshold": 0.8}
    via_broadcast = distributed.run(_exchange, 3, dict(base, communicator="broadcast"), grads)
    via_allgather = distributed.run(_exchange, 3, dict(base, communicator="allgather"), grads)
    for a, b in zip(via_broadcast, via_allgather):
        np.testing.assert_array_equal(a, b)


def _mismatched_sequence(rank, world):
    grc = grace_from_params({"compressor": "topk", "communicator": "allgather"})
    try:
        grc.step(torch.ones(10), "a" if rank == 0 else "b")
    except deepreduce.CommunicationError as exc:
        return str(exc)
    return "no error"


@pytest.mark.slow
def test_ranks_at_different_tensors_raise_naming_tensor_and_rank():
    messages = distributed.run(_mismatched_sequence, 2)
    assert "rank 0 sent tensor 'a'" in messages[0] and "rank 1" in messages[0]
    assert "rank 1 sent tensor 'b'" in messages[1]


def _dead_peer(rank, world):
    import time
    grc = grace_from_params({"compressor": "none"})
    if rank == 1:
        import os
        os._exit(0)  # dies without a word before the first exchange
    start = time.monotonic()
    try:
        grc.step(torch.ones(10), "fc.bias")
    except deepreduce.CommunicationError as exc:
        return str(exc), time.monotonic() - start
    return "no error", 0.0


@pytest.mark.slow
def test_dead_peer_raises_within_the_timeout():
    from deepreduce.train.launch import context
    ctx = context()
    queue = ctx.Queue()
    port = distributed.free_port()
    procs = [ctx.Process(target=distributed._worker, args=(_dead_peer, r, 2, port, 5, (), queue)) for r in range(2)]
    for p in procs:
        p.start()
    rank, status, value = queue.get(timeout=60)  # only rank 0 can report: rank 1 died
    for p in procs:
        p.join(timeout=10)
    assert rank == 0 and status == "ok", value
    message, seconds = value
    assert "'fc.bias'" in message and "rank 0 of 2" in message
    assert seconds < 30
