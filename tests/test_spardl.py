"""SparDL (SPEC §6): the schedule for any worker count, the C kernels through Python,
and the sparse all-reduce over real gloo processes and under mpirun: the global residual
invariant, bit-identical results on every rank and on both engines, at most k_b entries
per block, and bad input refused on every rank."""
import io
import math

import numpy as np
import pytest

import deepreduce
from deepreduce.communicators.spardl_core import (BlockCodec, HControl, bruck_rounds, keep_topk,
                                                  merge_in_order, reduce_scatter_rounds, round_sizes)
from deepreduce.errors import CommunicationError, FrameError

from distributed import run, run_mpi
from spardl_workload import SIZES, digest, run_steps



# -- the schedule ------------------------------------------------------------------------
def test_round_sizes_follow_the_spec():
    assert round_sizes(1) == []
    assert round_sizes(2) == [1]
    assert round_sizes(3) == [1, 1]
    assert round_sizes(4) == [2, 1]
    assert round_sizes(6) == [2, 2, 1]
    assert round_sizes(8) == [4, 2, 1]
    assert round_sizes(7) == [3, 2, 1]


@pytest.mark.parametrize("q", range(1, 17))
def test_reduce_scatter_sums_every_block_exactly_once(q):
    """Simulate the rounds with contributor multisets: worker r ends with block r summed
    over all q workers, each exactly once; every block a worker sends is complete when it
    leaves and is never received again."""
    held = [[{w: 1} for _ in range(q)] for w in range(q)]  # held[w][b]: contributor -> count
    rounds = [reduce_scatter_rounds(q, w) for w in range(q)]
    sent = [set() for _ in range(q)]
    for i in range(len(round_sizes(q))):
        messages = {}
        for w in range(q):
            dest, _, send, _ = rounds[w][i]
            assert not set(send) & sent[w], "a block is sent twice"
            sent[w] |= set(send)
            messages[dest] = (w, [dict(held[w][b]) for b in send])
            for b in send:
                held[w][b] = {}
        for w in range(q):
            _, source, _, recv = rounds[w][i]
            origin, payload = messages[w]
            assert origin == source
            for b, contribution in zip(recv, payload):
                assert b not in sent[w], "a block is received after it was sent"
                for c, count in contribution.items():
                    held[w][b][c] = held[w][b].get(c, 0) + count
    for w in range(q):
        assert held[w][w] == {c: 1 for c in range(q)}
        assert sent[w] == set(range(q)) - {w}


@pytest.mark.parametrize("size", range(1, 10))
def test_bruck_gathers_everything(size):
    have = [[p] for p in range(size)]
    schedules = [bruck_rounds(size, p) for p in range(size)]
    for i in range(len(schedules[0])):
        outgoing = {}
        for p in range(size):
            dest, _, count = schedules[p][i]
            outgoing[dest] = list(have[p][:count])
        for p in range(size):
            have[p] += outgoing[p]
    for p in range(size):
        assert have[p] == [(p + j) % size for j in range(size)]


def test_h_control_follows_the_reference_rule():
    control = HControl(block=10000, density=0.01, teams=2, k=100)
    assert (control.h, control.step, control.floor) == (50, 0, 50)
    control = HControl(block=100000, density=0.01, teams=2, k=1000)
    assert (control.h, control.step) == (500, 5)
    control.observe(merged=900, k=1000)   # below k with a positive step: toward k
    assert (control.h, control.inertia) == (505, True)
    control.observe(merged=950, k=1000)   # again toward k: the step doubles
    assert (control.h, control.step, control.inertia) == (515, 10, False)
    control.observe(merged=1100, k=1000)  # overshot: reverse and halve
    assert (control.h, control.step) == (510, -5)
    for _ in range(40):
        control.observe(merged=1100, k=1000)
    assert control.h == control.floor == 500  # never below floor(k/d)
    sparse = HControl(block=2000, density=0.5, teams=2, k=1000)
    for _ in range(60):
        sparse.observe(merged=10, k=1000)       # a nearly empty block: always below k
    assert sparse.h == 2000                     # h stops at the block size


# -- the kernels -------------------------------------------------------------------------
def test_block_frames_round_trip_and_refuse_damage():
    codec = BlockCodec("rice")
    block = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    original = block.copy()
    frame = codec.encode(block, 20, tag=3)
    idx, val = codec.decode(frame, 1000, 3, 20, "test")
    assert idx.size == 20 and np.all(np.diff(idx.astype(np.int64)) > 0)
    assert np.array_equal(val, original[idx]) and np.all(block[idx] == 0)
    assert np.abs(original[idx]).min() >= np.abs(block).max()
    with pytest.raises(FrameError, match="header field"):
        codec.decode(frame, 1000, 4, 20, "test")  # another block's frame
    damaged = frame.copy()
    damaged[60] ^= 0x10
    with pytest.raises(FrameError, match="CRC|checksum"):
        codec.decode(damaged, 1000, 3, 20, "test")
    two = np.concatenate([frame, frame])
    assert [f.nbytes for f in BlockCodec.split(two, 2, "test")] == [frame.nbytes] * 2
    with pytest.raises(FrameError):
        BlockCodec.split(two[:-1], 2, "test")


def test_merge_adds_in_order_and_keep_topk_reselects():
    a = (np.array([1, 5, 9], np.uint32), np.array([1.0, -2.0, 3.0], np.float32))
    b = (np.array([0, 5], np.uint32), np.array([0.5, 4.0], np.float32))
    idx, val = merge_in_order([a, b])
    assert idx.tolist() == [0, 1, 5, 9] and val.tolist() == [0.5, 1.0, 2.0, 3.0]
    idx, val = keep_topk(idx, val, 2)
    assert idx.tolist() == [5, 9] and val.tolist() == [2.0, 3.0]


# -- one process ----------------------------------------------------------------------------
def local_spardl(**extra):
    params = {"compressor": "topk", "memory": "residual", "communicator": "spardl",
              "compress_ratio": 0.1, "transport": "local", **extra}
    return deepreduce.grace_from_params(params)


def test_gathering_loop_and_flush_in_one_process():
    early = local_spardl()
    early.flush()                               # nothing given yet: nothing learned
    assert np.count_nonzero(early.step(np.ones(20, np.float32), "a")) == 2  # exchanged at once
    grc = local_spardl()
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(50).astype(np.float32) for _ in range(2)]
    first = grc.step(grads[0].copy(), "a")      # learning pass: exchanged at once
    assert np.count_nonzero(first) == 5
    grc.step(grads[1].copy(), "b")
    held = grads[0].copy()
    out = grc.step(held, "a")                   # 'a' again: the step is learned, now gathered
    assert out is held and np.array_equal(out, grads[0])  # not filled yet
    last = grc.step(grads[1].copy(), "b")       # the last tensor triggers the exchange
    assert np.count_nonzero(held) + np.count_nonzero(last) == 10  # one top-10 over 100 entries
    with pytest.raises(ValueError, match="not one of the 2 tensors"):
        grc.step(grads[0].copy(), "c")          # without flush() a new name is an error
    partial = grc.step(grads[0].copy(), "a")
    grc.flush()                                 # explicit end of a partial step
    assert np.count_nonzero(partial) == 5
    extra = grc.step(rng.standard_normal(30).astype(np.float32), "c")  # after a flush: accepted
    grc.flush()
    assert np.count_nonzero(extra) == 3


def test_results_and_residuals_a_caller_keeps_are_never_written_again():
    """The exchange's buffers come from a pool (reused once nobody holds them): results
    and residuals a caller keeps stay as they were, and the sums are those of fresh
    buffers."""
    import torch
    grc = local_spardl()
    rng = np.random.default_rng(1)
    grads = [torch.from_numpy(rng.standard_normal(1000).astype(np.float32)) for _ in range(6)]
    kept = [grc.exchange(g, "w") for g in grads[:3]]
    residual = grc.memory.residuals["w"]
    snapshots = [k.clone() for k in kept] + [residual.clone()]
    e = residual.clone()
    for g in grads[3:]:
        out = grc.exchange(g, "w")                    # one rank: the top-k of g + e, the rest kept
        x = g + e
        assert torch.equal(out, torch.where(out != 0, x, torch.zeros(())))
        assert torch.count_nonzero(out) == 100
        e = torch.where(out != 0, torch.zeros(()), x)
        assert torch.equal(grc.memory.residuals["w"], e)
    assert all(torch.equal(a, b) for a, b in zip(kept + [residual], snapshots))


def test_a_step_that_leaves_a_tensor_out_is_named_at_the_next_step():
    """A learned tensor left out of a step without flush() (a parameter frozen) leaves the
    step's other tensors unreduced; the next step said "given twice", not what was missing."""
    grc = local_spardl()
    for name in ("a", "b", "c", "a", "b", "c"):  # learned, then one full step
        grc.step(np.ones(50, np.float32), name)
    grc.step(np.ones(50, np.float32), "a")
    grc.step(np.ones(50, np.float32), "c")  # 'b' frozen: this step never completes
    with pytest.raises(ValueError, match="tensor 'a' came again before the step's other tensors 'b': the "
                                         r"tensors given since the last exchange \('a', 'c'\) were not reduced"):
        grc.step(np.ones(50, np.float32), "a")


def test_a_density_changed_during_training_takes_effect():
    """The engine kept the density of its first exchange while the handshake and
    grc.density said the new one."""
    grc = local_spardl(compress_ratio=0.05)
    assert np.count_nonzero(grc.exchange(np.arange(1, 2001, dtype=np.float32), "w")) == 100
    grc.compressor.compress_ratio = 0.5
    assert np.count_nonzero(grc.exchange(np.arange(1, 2001, dtype=np.float32), "w")) == 1000


def _pickled_mid_training(rank, world_size):
    import pickle
    grc = local_free_grc(compress_ratio=0.05)
    rng = np.random.default_rng(rank)
    for _ in range(3):
        grc.exchange(rng.standard_normal(2000).astype(np.float32), "w")
    copy = pickle.loads(pickle.dumps(grc))
    g = rng.standard_normal(2000).astype(np.float32)
    return grc.exchange(g.copy(), "w"), copy.exchange(g.copy(), "w")


@pytest.mark.slow
def test_a_communicator_pickled_mid_training_carries_on():
    """The engine kept its transport, which pickles as the name 'torch': the copy's next
    exchange failed ("'str' object has no attribute 'start_sendrecv'"), and so did a DDP
    hook state loaded from a checkpoint."""
    for original, copy in run(_pickled_mid_training, 2):
        assert np.array_equal(original, copy)


def test_torch_tensors_are_filled_in_place():
    torch = pytest.importorskip("torch")
    grc = local_spardl(compress_ratio=0.5)
    grc.step(torch.ones(4), "w")
    grc.flush()
    grad = torch.arange(4, dtype=torch.float32)
    out = grc.step(grad, "w")
    assert out is grad and out.dtype == torch.float32
    assert (out != 0).sum().item() == 2


@pytest.mark.parametrize("params, message", [
    ({"compress_ratio": 0.0}, r"compress_ratio must be in \(0, 1\]"),
    ({"density": 1.5}, "density must be in"),
    ({"compressor": "qsgd"}, "use compressor='topk'"),
    ({"memory": "dgc"}, "memory='residual'"),
    ({"spardl_teams": 0}, r"spardl_teams must be an integer in \[1, "),
    ({"spardl_index_codec": "bloom"}, "spardl_index_codec must be one of"),
    ({"auto_off": True}, "auto_off does not apply"),
])
def test_bad_settings_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        local_spardl(**params)


def test_teams_must_divide_the_world():
    with pytest.raises(ValueError, match="does not divide the world size 1"):
        local_spardl(spardl_teams=2).exchange(np.ones(8, np.float32), "x")


def test_a_zero_size_parameter_round_trips_in_every_step():
    """A model with an empty parameter (a pruned layer, Linear(16, 0)) failed at its first
    step: the first step exchanges each tensor alone, and the empty one was refused."""
    grc = local_spardl(compress_ratio=0.05)
    rng = np.random.default_rng(0)
    grads = {"w": rng.standard_normal(1200).astype(np.float32), "empty": np.ones((0, 16), np.float32),
             "b": rng.standard_normal(40).astype(np.float32)}
    for _ in range(3):
        for name, g in grads.items():
            out = grc.step(g.copy(), name)
            assert out.shape == g.shape
    assert grc.exchange(np.ones(0, np.float32), "x").shape == (0,)


# -- real processes ------------------------------------------------------------------------
def _workload(rank, world_size, teams, density, steps):
    return run_steps(teams, density, steps)


CASES = [(3, 1), (4, 1), (4, 2), (6, 1), (6, 2), (6, 3)]


@pytest.mark.slow
@pytest.mark.parametrize("world, teams", CASES)
def test_invariant_identity_and_budget_over_gloo(world, teams):
    density, steps = 0.05, 4
    records = run(_workload, world, teams, density, steps)
    q = world // teams
    n = sum(SIZES)
    block = math.ceil(n / q)
    k = max(1, int(block * density))
    for s in range(steps):
        results = [rec[s]["result"] for rec in records]
        for r in results[1:]:
            assert r.tobytes() == results[0].tobytes()  # bit-identical on every rank
        total_acc = np.sum([rec[s]["accumulated"].astype(np.float64) for rec in records], axis=0)
        total_res = np.sum([rec[s]["residual"].astype(np.float64) for rec in records], axis=0)
        lhs = total_res + world * results[0].astype(np.float64)
        scale = np.abs(total_acc).max()
        assert np.abs(lhs - total_acc).max() <= 1e-5 * scale  # the global residual invariant
        assert np.count_nonzero(results[0]) > 0
        if records[0][s]["gathered"]:
            padded = np.zeros(q * block)
            padded[:n] = results[0]
            assert (np.count_nonzero(padded.reshape(q, block), axis=1) <= k).all()
    # error feedback at work: the residual of a rank is not just its accumulated gradient
    assert not np.array_equal(records[0][-1]["residual"], records[0][-1]["accumulated"])


def _clustered(rank, world_size, teams):
    """Each team's nonzeros one run of 73 entries per block of 384 (the runs of the two
    teams meet), k_b = 147: an owner's final frame of fewer than k_b entries took more
    bytes (rice) than a frame of k_b, past the capacity its peer posted: gloo aborted the
    ranks. With one team, 146 nonzeros: the encoder's own buffer was too small."""
    grc = deepreduce.grace_from_params({"compressor": "topk", "memory": "residual", "communicator": "spardl",
                                        "compress_ratio": 147 / 384, "spardl_teams": teams,
                                        "spardl_index_codec": "rice"})
    q = world_size // teams
    g = np.zeros(q * 384, np.float32)
    for b in range(q):
        start = b * 384 + (238 + 73 * (rank // q) if teams > 1 else 238)
        g[start:start + (73 if teams > 1 else 146)] = 1.0 + rank
    return grc.exchange(g, "x").tobytes()


@pytest.mark.slow
@pytest.mark.parametrize("world, teams", [(4, 2), (2, 1)])
def test_frames_of_fewer_entries_than_the_budget_fit_where_the_budget_does(world, teams):
    results = run(_clustered, world, teams)
    assert all(r == results[0] for r in results)


def test_spare_buffers_of_steps_over_changing_tensors_do_not_pile_up():
    """Steps over another set of tensors each time (flush) kept every set's buffers for
    good: 2 GB after 120 steps of 12 tensors of 200k entries."""
    import tracemalloc
    grc = local_spardl()
    rng = np.random.default_rng(0)
    grads = {f"t{i}": rng.standard_normal(20_000).astype(np.float32) for i in range(12)}
    tracemalloc.start()
    try:
        held = []
        for step in range(60):
            for name in sorted(rng.choice(12, size=int(rng.integers(2, 12)), replace=False)):
                grc.step(grads[f"t{name}"].copy(), f"t{name}")
            grc.flush()
            if step in (10, 59):
                held.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert held[1] < 1.5 * held[0], held  # was 5x and growing


def _nonfinite(rank, world_size):
    grc = local_free_grc()
    grads = [np.ones(30, np.float32) * (rank + 1) for _ in range(2)]
    grc.exchange(grads[0], "w")
    before = grc.memory.residuals["w"].copy()
    bad = grads[1].copy()
    if rank == 1:
        bad[3] = np.inf
    grc.stats = deepreduce.stats.Stats()
    out = grc.exchange(bad, "w")
    recorded = grc.stats.totals()
    return (bool(np.isnan(out).all()), bool(np.array_equal(before, grc.memory.residuals["w"])),
            (recorded["calls"], recorded["dense_bytes"]))


def local_free_grc(**extra):
    return deepreduce.grace_from_params({"compressor": "topk", "memory": "residual", "communicator": "spardl",
                                         "compress_ratio": 0.1, **extra})


def _mismatch(rank, world_size, case):
    grc = local_free_grc()
    if case == "size":
        n = 40 if rank == 0 else 41
        grc.exchange(np.ones(n, np.float32), "w")
    elif case == "names":
        grc.exchange(np.ones(40, np.float32), f"w{rank}")
    elif case == "teams":
        local_free_grc(spardl_teams=1 + rank % 2).exchange(np.ones(40, np.float32), "w")
    return "no error"


def _tiny(rank, world_size):
    grc = local_free_grc(compress_ratio=1.0)
    grad = np.array([1.0, -2.0, 3.0], np.float32) * (rank + 1)
    return grc.exchange(grad, "w"), grc.memory.residuals["w"]


@pytest.mark.slow
def test_fewer_entries_than_workers():
    """n = 3 over 4 workers: some blocks lie wholly in the padding."""
    outs = run(_tiny, 4)
    total = sum(r + 1 for r in range(4))
    for result, residual in outs:
        assert result.tolist() == [total / 4, -2 * total / 4, 3 * total / 4]
        assert not residual.any()


def _tensors_other_communicators_take(rank, world_size):
    """Two steps of three tensors, from the second step on filled in place after the last:
    a leaf that requires grad and an inference tensor failed there, inside torch, with
    the step's exchange done and the tensors after them left unfilled; an expanded view
    now fails at its own step, by name, before anything is exchanged."""
    import torch
    grc = local_free_grc(compress_ratio=1.0)
    results = []
    for step in range(2):
        leaf = torch.full((6,), float(rank + step), requires_grad=True)
        with torch.inference_mode():
            inference = torch.full((6,), 10.0 * (rank + 1))
        plain = torch.full((6,), -1.0 * (rank + 1))
        given = [grc.step(t, n) for n, t in (("leaf", leaf), ("inference", inference), ("plain", plain))]
        results.append([t.detach().clone() for t in given])  # once the step's last has come
    # The residuals in their tensors' kind and shape (they were flat NumPy arrays, which
    # torch.load's default weights_only refused), a checkpoint of them loadable.
    saved = io.BytesIO()
    torch.save(grc.memory.residuals, saved)
    saved.seek(0)
    loaded = torch.load(saved)
    kinds = {name: (type(t).__name__, tuple(t.shape)) for name, t in loaded.items()}
    try:
        grc.step(torch.ones(3).expand(2, 3), "leaf")
    except ValueError as e:
        refused = str(e)
    return [[r.tolist() for r in step] for step in results], refused, kinds


def test_tensors_filled_in_place_may_require_grad_or_be_inference_tensors():
    for steps, refused, kinds in run(_tensors_other_communicators_take, 2):
        assert kinds == {name: ("Tensor", (6,)) for name in ("leaf", "inference", "plain")}
        assert steps[1] == [[1.5] * 6, [15.0] * 6, [-1.5] * 6]
        assert steps[0] == [[0.5] * 6, [15.0] * 6, [-1.5] * 6]
        assert refused.startswith("tensor 'leaf': spardl writes a step's results into the tensors given to step")
        assert "has elements that share memory (an expanded view)" in refused


@pytest.mark.slow
def test_nonfinite_gradient_passes_through_on_every_rank():
    # The skipped step is recorded with its dense bytes (it went unrecorded: its dense_bytes
    # in a training log was 0).
    assert run(_nonfinite, 3) == [(True, True, (1, 4 * 30))] * 3


@pytest.mark.slow
@pytest.mark.parametrize("case, message", [("size", "total gradient size"), ("names", "tensors of the step"),
                                           ("teams", "spardl_teams")])
def test_ranks_that_disagree_raise_on_every_rank(case, message):
    with pytest.raises(AssertionError) as info:
        run(_mismatch, 2, case, timeout=60)
    text = str(info.value)
    assert text.count("CommunicationError") >= 2 and message in text  # both ranks raised


@pytest.mark.slow
@pytest.mark.mpi
def test_mpirun_gives_the_bits_of_gloo():
    world, teams, density, steps = 4, 2, 0.05, 3
    gloo = [digest(rec) for rec in run(_workload, world, teams, density, steps)]
    rows = run_mpi("spardl_mpi_run.py", world, teams, density, steps)
    assert [row["digest"] for row in sorted(rows, key=lambda r: r["rank"])] == gloo
    assert len(set(gloo)) == 1


SPARDL = {"compressor": "topk", "memory": "residual", "communicator": "spardl", "compress_ratio": 0.1}


@pytest.mark.slow
def test_grace_loop_and_ddp_hook_train_like_dense():
    """The GRACE per-tensor loop (tensors gathered per step) and the DDP hook (one
    exchange per bucket) on 3 ranks reach the dense loop's accuracy within 5 points."""
    import grace_loop
    dense = run(grace_loop.train, 3, {"compressor": "none"})
    loop = run(grace_loop.train, 3, SPARDL)
    hook = run(grace_loop.train_ddp_hook, 3, SPARDL)
    for runs in (loop, hook):
        assert all(r[0].tobytes() == runs[0][0].tobytes() for r in runs)  # ranks identical
    assert dense[0][2] > 0.85
    assert abs(loop[0][2] - dense[0][2]) <= 0.05, (loop[0][2], dense[0][2])
    assert abs(hook[0][1] - dense[0][2]) <= 0.05, (hook[0][1], dense[0][2])


def _silent_peer(rank, world_size):
    import time
    from deepreduce.transports import resolve
    transport = resolve("torch")
    if rank == 1:
        time.sleep(8)  # alive but never sends: rank 0's receive must give up on its own
        return None
    start = time.perf_counter()
    try:
        transport.start_sendrecv(np.ones(4, np.uint8), 1, 1, "w").wait()
    except CommunicationError as e:
        return str(e), time.perf_counter() - start
    return "no error", time.perf_counter() - start


@pytest.mark.slow
def test_a_silent_peer_raises_within_the_group_timeout():
    message, seconds = run(_silent_peer, 2, pg_timeout=3)[0]
    assert "point-to-point exchange of tensor 'w' failed on rank 0" in message
    assert seconds < 7


def _bounded_hops(rank, world_size):
    """Rank 0 receives through start_sendrecv with a capacity of 64 bytes; rank 1 sends
    well-formed messages of 0, 1, 63 and 64 bytes, then forged ones in the hop's own
    form ([length int64][bytes][END_MARK], tag 7303)."""
    import torch
    import torch.distributed as dist
    from deepreduce.transports import resolve
    from deepreduce.transports.base import END_MARK
    transport = resolve("torch")
    lengths = (0, 1, 63, 64)
    if rank == 1:
        for n in lengths:
            transport.start_sendrecv(np.arange(n, dtype=np.uint8), 0, 0, "w", capacity=64).wait()

        def forged(stated, body):
            message = np.concatenate([np.array([stated], np.int64).view(np.uint8), body]).astype(np.uint8)
            dist.send(torch.from_numpy(message), 0, tag=7303)
        forged(1000, np.zeros(40, np.uint8))                   # states more than can come
        forged(32, np.zeros(10, np.uint8))                     # states 32, sends 10 and no mark
        forged(8, np.concatenate([np.zeros(4, np.uint8), END_MARK]))  # the mark 4 bytes early
        return None
    received = [transport.start_sendrecv(np.full(3, 9, np.uint8), 1, 1, "w", capacity=64).wait().tolist()
                for _ in lengths]
    errors = []
    for _ in range(3):
        pending = transport.start_sendrecv(np.empty(0, np.uint8), 1, 1, "w", capacity=64)
        try:  # (rank 1 takes none of these sends: they are left to the group's end)
            errors.append(f"no error: {pending.wait().tolist()}")
        except CommunicationError as e:
            errors.append(str(e))
    return received, errors


def test_a_hop_of_known_capacity_is_one_message_and_refuses_forgeries():
    received, errors = run(_bounded_hops, 2)[0]
    assert received == [list(range(n)) for n in (0, 1, 63, 64)]
    assert "rank 1 sent 1000 bytes where at most 64 can come" in errors[0]
    assert "rank 1 sent fewer bytes than the 32 it stated" in errors[1]
    assert "rank 1 sent fewer bytes than the 8 it stated" in errors[2]
    assert all("point-to-point exchange of tensor 'w' failed on rank 0" in e for e in errors)


def test_built_by_both_factories_and_the_grace_path():
    from grace_dl.dist.communicator.spardl import SparDL
    params = {"compressor": "topk", "memory": "residual", "communicator": "spardl", "density": 0.02,
              "transport": "local", "spardl_teams": 1}
    for factory in (deepreduce.grace_from_params, deepreduce.deepreduce_from_params):
        grc = factory(params)
        assert isinstance(grc, SparDL) and grc.density == 0.02 and grc.compressor.compress_ratio == 0.02
