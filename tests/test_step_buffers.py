"""Who owns the memory a step hands back (docs/performance.md, "Buffers a step reuses"):
decoders' outputs are reused per tensor name only once nothing refers to them, state
buffers are found again by identity but never behind a caller's back, and a one-rank
result is never the caller's own gradient."""
import gc
import weakref

import numpy as np
import pytest

from deepreduce import grace_from_params
from deepreduce.compressors.qsgd import QSGDCompressor
from deepreduce.base import Compressor
from deepreduce.compressors.dgc import DgcCompressor
from deepreduce.compressors.fp16 import FP16Compressor
from deepreduce.compressors.randomk import RandomKCompressor
from deepreduce.compressors.signum import SignumCompressor
from deepreduce.compressors.threshold import ThresholdCompressor
from deepreduce.compressors.topk import TopKCompressor
from deepreduce.errors import FrameError
from deepreduce.memories.residual import ResidualMemory

torch = pytest.importorskip("torch")


def address(x):
    return x.data_ptr() if torch.is_tensor(x) else x.__array_interface__["data"][0]


def snapshot(x):
    return x.clone() if torch.is_tensor(x) else x.copy()


def gradient(kind, seed, n=1000):
    values = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return torch.from_numpy(values) if kind == "torch" else values


# ------------------------------------------------------------- decoders' outputs
@pytest.mark.parametrize("kind", ["torch", "numpy"])
@pytest.mark.parametrize("make", [lambda: SignumCompressor(0.9), lambda: QSGDCompressor(127, 128),
                                  lambda: TopKCompressor(0.1), lambda: ThresholdCompressor(0.5),
                                  lambda: DgcCompressor(0.1), lambda: RandomKCompressor(0.1), FP16Compressor],
                         ids=["signum", "qsgd", "topk", "threshold", "dgc", "randomk", "fp16"])
def test_a_held_result_is_never_written_and_a_released_one_is_reused(kind, make):
    compressor = make()

    def round_trip(seed):
        payload, ctx = compressor.compress(gradient(kind, seed), "w")
        return compressor.decompress(payload, ctx)

    first = round_trip(1)
    kept = snapshot(first)
    second = round_trip(2)
    third = round_trip(3)  # every buffer of the name is held now: a fresh one
    assert len({address(first), address(second), address(third)}) == 3
    np.testing.assert_array_equal(np.asarray(first), np.asarray(kept))
    held = {address(first), address(second)}
    del first, second, third
    gc.collect()
    assert address(round_trip(4)) in held  # released: taken again, nothing allocated


def fp16_expected(g, ctx):
    return np.asarray(g).astype(np.float16).astype(np.float32)


def sparse_expected(g, ctx):
    dense = np.zeros(ctx.numel, dtype=np.float32)
    dense[ctx.indices] = np.asarray(g)[ctx.indices]
    return dense


@pytest.mark.parametrize("kind", ["torch", "numpy"])
@pytest.mark.parametrize("make, expected", [(FP16Compressor, fp16_expected),
                                            (lambda: RandomKCompressor(0.3), sparse_expected),
                                            (lambda: TopKCompressor(0.3), sparse_expected),
                                            (lambda: DgcCompressor(0.3), sparse_expected),
                                            (lambda: ThresholdCompressor(0.5), sparse_expected)],
                         ids=["fp16", "randomk", "topk", "dgc", "threshold"])
def test_a_held_payload_is_never_written_and_a_released_one_is_reused(kind, make, expected):
    compressor = make()
    first, first_ctx = compressor.compress(gradient(kind, 1), "w")
    kept_indices = getattr(first_ctx, "indices", np.empty(0)).copy()
    kept = snapshot(first[0])
    second, ctx = compressor.compress(gradient(kind, 2), "w")
    assert address(first[0]) != address(second[0])
    np.testing.assert_array_equal(np.asarray(first[0]), np.asarray(kept))
    np.testing.assert_array_equal(getattr(first_ctx, "indices", np.empty(0)), kept_indices)  # sparse: pooled
    np.testing.assert_array_equal(np.asarray(compressor.decompress(second, ctx)), expected(gradient(kind, 2), ctx))
    held = {address(first[0]), address(second[0])}
    del first, second, first_ctx, ctx
    gc.collect()
    assert address(compressor.compress(gradient(kind, 3), "w")[0][0]) in held


FRAMED_METHODS = ["qsgd", "terngrad", "onebit", "signsgd", "signum", "efsignsgd", "natural", "8bit", "u8bit",
                  "inceptionn", "sketch", "adaq", "3lc"]


@pytest.mark.parametrize("kind", ["torch", "numpy"])
@pytest.mark.parametrize("method", FRAMED_METHODS)
def test_a_held_quantiser_frame_is_never_written_and_a_released_one_is_reused(kind, method):
    """The quantisers' frames come from a pool per name too (a fresh 100 MB frame cost as
    long as its encoding in page faults): one that is held stays as it was sent, and one
    that is let go is written again, whatever its size this step (inceptionn's, adaq's
    and 3lc's depend on the data)."""
    compressor = grace_from_params({"compressor": method, "compress_ratio": 0.05}).compressor
    first, first_ctx = compressor.compress(gradient(kind, 1, 20_000), "w")
    kept = snapshot(first[0])
    second, ctx = compressor.compress(gradient(kind, 2, 20_000), "w")
    assert address(first[0]) != address(second[0])
    np.testing.assert_array_equal(np.asarray(first[0]), np.asarray(kept))
    np.testing.assert_array_equal(np.asarray(compressor.decompress(first, first_ctx)),
                                  np.asarray(compressor.decompress([kept], first_ctx)))
    pooled = address(first[0])  # the name's buffer (the second's was a spare)
    del first, second, first_ctx, ctx
    gc.collect()
    # Had the pool let the buffer go, this would take its memory (the allocator hands the
    # freed block out again), so the frame found at the address is the pool's.
    squatter = np.empty(kept.numel() if torch.is_tensor(kept) else kept.size, dtype=np.uint8)
    third = compressor.compress(gradient(kind, 3, 20_000), "w")[0][0]
    assert address(third) == pooled and address(squatter) != pooled


@pytest.mark.parametrize("make", [lambda: DgcCompressor(0.3), lambda: ThresholdCompressor(0.5)],
                         ids=["dgc", "threshold"])
def test_frames_whose_size_changes_every_step_reuse_one_buffer(make):
    """dgc's and threshold's counts differ from step to step, and so do their frames: a
    frame fits in the buffer of a larger one before it, and one that outgrows it gets a
    buffer with room to spare, so sizes that wander take no fresh buffer."""
    compressor = make()
    sizes, buffers = set(), []
    for seed in range(8):
        frame = compressor.compress(gradient("numpy", seed, 20_000), "w")[0][0]
        sizes.add(frame.size)
        # A weak reference: a buffer nothing else keeps dies (the allocator may still
        # hand its address out again, so addresses alone would not tell).
        buffers.append(weakref.ref(frame if frame.base is None else frame.base))
        del frame
    assert len(sizes) == 8
    assert buffers[0]() is not None and all(b() is buffers[0]() for b in buffers)


@pytest.mark.parametrize("kind", ["torch", "numpy"])
@pytest.mark.parametrize("n", [1000, 3 * 2 ** 20 + 77], ids=["small", "threads"])
def test_random_k_keeps_as_residual_exactly_what_it_did_not_send(kind, n):
    """Random-k's values travel exactly: the step's result and the residual add up to the
    compensated gradient bit for bit, and they share no nonzero entry."""
    grc = grace_from_params({"compressor": "randomk", "compress_ratio": 0.3, "memory": "residual",
                             "world_size": 1, "transport": "local"})
    g = gradient(kind, 5, n)
    result = np.asarray(grc.step(g, "w"))
    residual = np.asarray(grc.memory.residuals["w"])
    assert int(np.count_nonzero(result)) == int(0.3 * n)  # N(0,1): no drawn entry is zero
    assert not np.any((result != 0) & (residual != 0))
    np.testing.assert_array_equal(result + residual, np.asarray(g))


def test_a_view_of_a_result_keeps_its_buffer_held():
    compressor = SignumCompressor(0.9)
    payload, ctx = compressor.compress(gradient("torch", 1), "w")
    tail = compressor.decompress(payload, ctx).view(10, 100)[5:]  # the result itself is dropped
    kept = tail.clone()
    for seed in range(2, 6):
        payload, ctx = compressor.compress(gradient("torch", seed), "w")
        compressor.decompress(payload, ctx)
    torch.testing.assert_close(tail, kept, rtol=0, atol=0)


def test_signum_steps_held_as_p_grad_stay_the_votes_they_were():
    """GRACE's loop keeps each step's result as p.grad until the next backward (or for
    good, in a list): every result keeps the sign of its own step's momentum."""
    grc = grace_from_params({"compressor": "signum", "memory": "none", "communicator": "allgather",
                             "momentum": 0.9, "world_size": 1, "transport": "local"})
    momentum, results, wanted = None, [], []
    for seed in range(6):
        g = gradient("torch", seed)
        momentum = g.clone() if momentum is None else 0.1 * g + 0.9 * momentum
        results.append(grc.step(g, "w"))
        wanted.append(torch.where(momentum >= 0, 1.0, -1.0))
    for got, want in zip(results, wanted):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


# ---------------------------------------------------------------- state buffers
def test_a_residual_replaced_by_hand_is_the_one_compensated():
    grc = grace_from_params({"compressor": "topk", "compress_ratio": 0.1, "memory": "residual",
                             "communicator": "allgather", "world_size": 1, "transport": "local"})
    g = gradient("torch", 1)
    for _ in range(3):
        grc.step(g, "w")
    residuals = grc.memory.residuals
    residuals["w"].set_(torch.full((1000,), -1.0))  # the entry the memory made, moved to other memory
    torch.testing.assert_close(grc.memory.compensate(g, "w"), g - 1.0)
    residuals["w"] = torch.full((1000,), 2.0)  # a new entry
    torch.testing.assert_close(grc.memory.compensate(g, "w"), g + 2.0)


def as_bytes(x):
    return (x.detach().numpy() if torch.is_tensor(x) else np.asarray(x)).tobytes()


@pytest.mark.parametrize("change", ["set_", "replaced", "replaced-by-numpy", "resized"])
def test_a_residual_changed_by_hand_between_fused_steps_is_the_one_compensated(change):
    """Top-k's fused step reads the residual by its two buffers' turns
    (``TensorState.turn``) only while the entry is the buffer the memory made, on that
    memory: after an entry moved with ``set_``, or replaced, the next step compensates
    with what the caller put there, as the roles' step does (``StepByRoles``); a residual
    of another size is refused by both. Fails with turn's check of the entry's data
    pointer dropped (``set_``)."""
    params = {"compressor": "topk", "compress_ratio": 0.1, "memory": "residual", "communicator": "allgather",
              "world_size": 1, "transport": "local"}
    fused, roles = grace_from_params(dict(params)), grace_from_params(dict(params))
    roles.memory = StepByRoles()
    changes = {"set_": lambda r: r["w"].set_(torch.full((1000,), -1.5)),
               "replaced": lambda r: r.__setitem__("w", torch.full((1000,), 2.5)),
               "replaced-by-numpy": lambda r: r.__setitem__("w", np.full(1000, 0.5, dtype=np.float32)),
               "resized": lambda r: r.__setitem__("w", torch.zeros(999))}
    for step in range(7):
        g = gradient("torch", step)
        if step == 3:
            for grc in fused, roles:
                changes[change](grc.memory.residuals)
            if change == "resized":
                for grc in fused, roles:
                    with pytest.raises(ValueError, match="999"):
                        grc.step(g, "w")
                return
        results = [grc.step(g, "w") for grc in (fused, roles)]
        assert as_bytes(results[0]) == as_bytes(results[1]), f"step {step}"
        assert as_bytes(fused.memory.residuals["w"]) == as_bytes(roles.memory.residuals["w"]), f"step {step}"


def test_a_pools_pointers_are_its_buffers_and_made_afresh_for_arrays_it_does_not_keep():
    """``Outputs.take_pointed``: the pointer kept with each buffer the pool keeps (for a
    growing pool, its view's start), and one made for an array the pool hands out
    without keeping; a released buffer's pointer leaves with it (else the buffer taken
    in its place would get it)."""
    from deepreduce._native import ffi
    from deepreduce.state import Outputs

    def at(pointer):
        return int(ffi.cast("uintptr_t", pointer))
    for pool, sizes in ((Outputs(keep=2), (100, 100, 100)), (Outputs(keep=1, dtype=np.uint8, grow=True), (40, 30, 60))):
        held = []
        for size in sizes:  # each held: the next is another buffer, or one the pool does not keep
            array, pointer = pool.take_pointed("w", size)
            assert array.size == size and at(pointer) == address(array)
            held.append(array)
        assert len({address(a) for a in held}) == len(held)
    pool = Outputs(keep=2)
    (first, _), (second, _) = pool.take_pointed("w", 100), pool.take_pointed("w", 100)
    assert pool.release("w", first) is first
    third, pointer = pool.take_pointed("w", 100)  # second is held: a new buffer in first's place
    assert third is not second and at(pointer) == address(third)


class StepByRoles(ResidualMemory):
    """A GRACE-style subclass with its own update: the step then calls compensate,
    compress and update one by one (no ``fused_encode``)."""

    def update(self, tensor, name, compressor, tensors, ctx):
        return super().update(tensor, name, compressor, tensors, ctx)


def adoption_runs(monkeypatch, method, kind, steps, between=None, memory=None):
    """Two one-rank runs of ``method`` + residual over the same large gradients: with the
    compensated tensor adopted as the residual, and with it copied (adoption off). Yields
    (step, adopting grc, copying grc) after each step; ``between(grc, step)`` runs on both
    before each step. ``memory``: a class to use in place of ResidualMemory."""
    from deepreduce.memories import residual
    least = residual.ADOPT_MIN_NUMEL
    n = least + 7
    params = {"compressor": method, "compress_ratio": 0.05, "threshold": 1.5, "memory": "residual",
              "communicator": "allgather", "world_size": 1, "transport": "local"}
    adopting, copying = grace_from_params(dict(params)), grace_from_params(dict(params))
    if memory is not None:
        adopting.memory, copying.memory = memory(), memory()
    for step in range(steps):
        g = gradient(kind, step, n)
        for grc, adopt_from in ((adopting, least), (copying, n + 1)):
            monkeypatch.setattr(residual, "ADOPT_MIN_NUMEL", adopt_from)
            if between is not None:
                between(grc, step)
            grc.step(g, "w")
        yield step, adopting, copying


@pytest.mark.parametrize("kind", ["torch", "numpy"])
@pytest.mark.parametrize("method, memory, buffers", [
    ("topk", StepByRoles, 3), ("threshold", None, 3), ("dgc", None, 3), ("randomk", None, 3),
    ("topk", None, 2)], ids=["topk-by-roles", "threshold", "dgc", "randomk", "topk-fused"])
def test_a_sparsifiers_compensated_tensor_becomes_its_residual_with_the_same_bits(monkeypatch, method, memory,
                                                                                   buffers, kind):
    """A sparsifier's residual is its compensated tensor with the sent entries zeroed:
    the memory keeps that tensor instead of copying it, with the bits of the copy, and
    from the fourth step on the same three buffers take turns (no new one per step).
    Top-k's fused step (``ResidualMemory.fused_encode``) compensates straight into the
    residual's next buffer: two buffers take turns."""
    seen = []  # weak references to the residuals' buffers: a buffer made per step would die
    for step, adopting, copying in adoption_runs(monkeypatch, method, kind, 10, memory=memory):
        kept, copied = adopting.memory.residuals["w"], copying.memory.residuals["w"]
        assert type(kept) is type(copied) and bits(kept).tobytes() == bits(copied).tobytes()
        if step >= 3:
            seen.append(weakref.ref(adopting.memory.residuals.view("w", np.asarray(kept).size)))
        del kept, copied  # held here, a residual could not take its turn again
    held = [ref() for ref in seen]
    assert all(b is not None for b in held) and len({id(b) for b in held}) == buffers


def test_a_rolled_back_step_leaves_the_adopted_residual_as_it_was(monkeypatch):
    """A step rejected after the memory's update (another rank's aggregate was non-finite)
    takes the adopted residual back: the run goes on with the bits of one that skipped
    the step."""
    def reject_a_step(grc, step):
        if step == 4:
            before = snapshot(grc.memory.residuals["w"])
            memory, compressor = grc.memory, grc.compressor
            g = gradient("torch", 99, before.numel())
            compensated = memory.compensate(g, "w")
            tensors, ctx = compressor.compress(compensated, "w")
            memory.update(compensated, "w", compressor, tensors, ctx)
            assert not torch.equal(memory.residuals["w"], before)
            memory.rollback("w")
            assert bits(memory.residuals["w"]).tobytes() == bits(before).tobytes()

    for _, adopting, copying in adoption_runs(monkeypatch, "topk", "torch", 9, reject_a_step):
        assert bits(adopting.memory.residuals["w"]).tobytes() == bits(copying.memory.residuals["w"]).tobytes()


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_dgc_memory_compresses_a_copy_of_v_and_a_nonfinite_gradient_leaves_u_and_v(kind):
    """DGC's memory: u = m·u + g and v = v + u (one sweep in C); the compressor gets a
    copy of v, which the masking of the sent entries in v leaves alone; a gradient
    holding a NaN or an infinity leaves u and v as they were."""
    grc = grace_from_params({"compressor": "dgc", "memory": "dgc", "communicator": "allgather",
                             "compress_ratio": 0.3, "world_size": 1, "transport": "local"})
    memory = grc.memory
    grc.step(gradient(kind, 1), "w")
    u, v = (np.asarray(snapshot(memory.residuals["w"])), np.asarray(snapshot(memory.gradients["w"])))
    g = np.asarray(gradient("numpy", 2))
    want_u = np.float32(0.9) * u + g
    want_v = v + want_u
    compensated = memory.compensate(gradient(kind, 2), "w")
    assert type(compensated) is type(gradient(kind, 2))
    np.testing.assert_array_equal(np.asarray(memory.residuals["w"]), want_u)
    np.testing.assert_array_equal(np.asarray(compensated), want_v)
    tensors, ctx = grc.compressor.compress(compensated, "w")
    memory.update(compensated, "w", grc.compressor, tensors, ctx)
    np.testing.assert_array_equal(np.asarray(compensated), want_v)
    assert not np.asarray(memory.gradients["w"])[ctx.indices].any()
    for bad in (float("nan"), float("inf")):
        u, v = snapshot(memory.residuals["w"]), snapshot(memory.gradients["w"])
        poisoned = gradient(kind, 3)
        poisoned[17] = bad
        assert not np.isfinite(np.asarray(memory.compensate(poisoned, "w"))).all()
        np.testing.assert_array_equal(np.asarray(memory.residuals["w"]), np.asarray(u))
        np.testing.assert_array_equal(np.asarray(memory.gradients["w"]), np.asarray(v))
        assert not np.isfinite(np.asarray(grc.step(poisoned, "w"))).all()
        np.testing.assert_array_equal(np.asarray(memory.residuals["w"]), np.asarray(u))
        np.testing.assert_array_equal(np.asarray(memory.gradients["w"]), np.asarray(v))


# ------------------------------------------------------------ one-rank results
@pytest.mark.parametrize("kind", ["torch", "numpy"])
@pytest.mark.parametrize("communicator", ["allgather", "broadcast"])
@pytest.mark.parametrize("memory", ["none", "residual"])
def test_a_one_rank_result_is_not_the_callers_gradient(kind, communicator, memory):
    grc = grace_from_params({"compressor": "none", "memory": memory, "communicator": communicator,
                             "world_size": 1, "transport": "local"})
    g = gradient(kind, 1)
    want = np.asarray(snapshot(g))
    result = grc.step(g, "w")
    g[:] = 0  # zero_grad(set_to_none=False), or the next backward accumulating into it
    np.testing.assert_array_equal(np.asarray(result), want)
    result[:] = 5  # an optimizer's in-place edit of p.grad leaves the gradient alone
    assert not np.asarray(g).any()


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_a_one_rank_copy_is_written_only_once_released(kind):
    """'none' with one rank copies the gradient into a buffer per name, reused as the
    decoders' outputs are: never while a result made in it is held."""
    grc = grace_from_params({"compressor": "none", "memory": "none", "communicator": "allgather",
                             "world_size": 1, "transport": "local"})
    first = grc.step(gradient(kind, 1), "w")
    kept = snapshot(first)
    second = grc.step(gradient(kind, 2), "w")
    third = grc.step(gradient(kind, 3), "w")  # both of the name's buffers are held: a fresh one
    assert len({address(first), address(second), address(third)}) == 3
    np.testing.assert_array_equal(np.asarray(first), np.asarray(kept))
    np.testing.assert_array_equal(np.asarray(third), np.asarray(gradient(kind, 3)))
    held = {address(first), address(second)}
    del first, second, third
    gc.collect()
    assert address(grc.step(gradient(kind, 4), "w")) in held


def test_the_compensated_tensor_is_reused_only_once_released():
    grc = grace_from_params({"compressor": "none", "memory": "residual", "communicator": "allgather",
                             "world_size": 1, "transport": "local"})
    g = gradient("torch", 1)
    grc.step(g, "w")  # from the next step on the memory holds a residual: compensate makes a tensor
    held = grc.step(g, "w")  # with 'none' and one rank: the compensated tensor itself
    kept = held.clone()
    later = grc.step(gradient("torch", 2), "w")
    for seed in range(3, 6):
        grc.step(gradient("torch", seed), "w")
    torch.testing.assert_close(held, kept, rtol=0, atol=0)
    released = address(later)
    del later
    gc.collect()
    assert address(grc.memory.compensate(g, "w")) == released != address(held)


# ------------------------------------------------------------- every rank's frames summed
SPARSIFIERS = {"topk": lambda: TopKCompressor(0.3), "threshold": lambda: ThresholdCompressor(0.0),
               "dgc": lambda: DgcCompressor(0.3), "randomk": lambda: RandomKCompressor(0.3)}


def rank_gradient(seed, n=1000):
    """N(0,1) with signed zeros among the entries (threshold 0 selects them too)."""
    values = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    values[seed::7] = -0.0
    values[seed + 3::11] = 0.0
    return torch.from_numpy(values)


def bits(x):
    return np.asarray(x).view(np.uint32)


@pytest.mark.parametrize("world", [2, 3, 5])
@pytest.mark.parametrize("method", sorted(SPARSIFIERS))
def test_sparse_frames_summed_into_one_tensor_are_the_bits_of_the_decoded_sum(method, world):
    """Allgather's aggregate scatter-adds every rank's frame into one tensor (random-k
    sums the ranks' values first): the same bits as GRACE's way, each decompressed,
    summed and averaged in torch."""
    ranks = [SPARSIFIERS[method]() for _ in range(world)]  # random-k's draws line up across ranks
    compressor = ranks[0]
    frames, contexts = zip(*(rank.compress(rank_gradient(i), "w") for i, rank in enumerate(ranks)))
    ctx = contexts[0]
    grace_way = sum(compressor.decompress(list(f), ctx) for f in frames) / world
    summed = compressor.decompress_aggregate(frames, ctx, world)
    assert torch.is_tensor(summed) and summed.dtype == torch.float32
    np.testing.assert_array_equal(bits(summed), bits(grace_way))
    unaveraged = compressor.decompress_aggregate(frames, ctx, 1)
    np.testing.assert_array_equal(bits(unaveraged), bits(sum(compressor.decompress(list(f), ctx) for f in frames)))
    one = compressor.decompress_aggregate(frames[:1], ctx, 1)  # a single rank keeps its -0.0
    np.testing.assert_array_equal(bits(one), bits(compressor.decompress(list(frames[0]), ctx)))


def test_a_ranks_nonfinite_marker_makes_the_summed_tensor_nan_and_a_corrupt_frame_is_refused():
    compressor = TopKCompressor(0.3)
    poisoned = rank_gradient(1)
    poisoned[5] = float("nan")
    frames = [compressor.compress(g, "w")[0] for g in (rank_gradient(0), poisoned, rank_gradient(2))]
    _, ctx = compressor.compress(rank_gradient(0), "w")
    assert torch.isnan(compressor.decompress_aggregate(frames, ctx, 3)).all()
    corrupt = frames[2][0].clone()
    corrupt[-1] ^= 1  # the CRC no longer matches
    with pytest.raises(FrameError, match="payload"):
        compressor.decompress_aggregate([frames[0], frames[1], [corrupt]], ctx, 3)


def assert_marker_for_any_nonfinite(compressor, clean):
    """A NaN or an infinity at the start, the middle or the end of ``clean`` selects
    nothing and travels as the marker (NaN everywhere once decoded)."""
    n = clean.numel()
    for at in (0, n // 2 + 3, n - 1):
        for bad in (float("nan"), float("inf"), -float("inf")):
            poisoned = clean.clone()
            poisoned[at] = bad
            payload, ctx = compressor.compress(poisoned, "w")
            assert not ctx.finite and ctx.indices.size == 0, (at, bad)
            assert torch.isnan(compressor.decompress(payload, ctx)).all()


# Top-k's C select finds an Inf or a NaN in the sweep it makes anyway (no pass of its
# own) and collects the values as it goes; the decoders say whether the sums they wrote
# are finite, so the step sweeps neither the compensated tensor nor the result.
@pytest.mark.parametrize("n", [1000, 200_003], ids=["full-select", "sampled"])
def test_top_k_sends_the_marker_for_an_inf_or_a_nan_anywhere(n):
    compressor = TopKCompressor(0.01)
    clean = rank_gradient(4, n)
    (frame,), ctx = compressor.compress(clean, "w")
    assert ctx.finite
    k = ctx.indices.size
    expected = torch.zeros(n)
    largest = torch.topk(clean.abs(), k).indices  # N(0,1): no ties at the k-th magnitude
    expected[largest] = clean[largest]
    np.testing.assert_array_equal(bits(compressor.decompress([frame], ctx)), bits(expected))
    assert_marker_for_any_nonfinite(compressor, clean)


# dgc's and threshold's C selections collect the values and meet Inf/NaN in their one
# sweep of the tensor: no separate finiteness pass and no gather, and the same selection
# as their select (which the DeepReduce wrappers call).
@pytest.mark.parametrize("n", [1000, 200_003], ids=["small", "sampled"])
@pytest.mark.parametrize("cls, arg", [(DgcCompressor, 0.01), (ThresholdCompressor, 1.5)], ids=["dgc", "threshold"])
def test_a_sparsifier_picks_its_selection_and_values_in_one_sweep_and_sends_the_marker(cls, arg, n, monkeypatch):
    import deepreduce.compressors._sparse as sparse_module

    class EveryOther(cls):  # a selection of its own: picked by it, not by the C sweep
        def select(self, flat, name):
            return np.arange(0, flat.size, 2, dtype=np.uint32)

    own = EveryOther(arg)
    indices, values = own.pick(rank_gradient(5, n).numpy(), "w")
    np.testing.assert_array_equal(indices, np.arange(0, n, 2))
    monkeypatch.setattr(sparse_module, "all_finite", lambda flat: pytest.fail("a separate finiteness pass"))
    picker, selector = cls(arg), cls(arg)
    clean = rank_gradient(5, n)
    for scale in (1.0, 1.0, 2.0):  # each step draws dgc a new sample; threshold's room grows
        flat = (clean * scale).numpy()
        indices, values = picker.pick(flat, "w")
        np.testing.assert_array_equal(indices, selector.select(flat, "w"))
        np.testing.assert_array_equal(values.view(np.uint32), flat[indices].view(np.uint32))
    assert_marker_for_any_nonfinite(picker, clean)


def test_a_summed_result_is_vouched_finite_only_when_every_sum_written_is():
    compressor = TopKCompressor(0.3)
    gradients = [rank_gradient(rank) for rank in range(3)]
    frames = [compressor.compress(g, "w")[0] for g in gradients]
    _, ctx = compressor.compress(gradients[0], "w")
    summed = compressor.decompress_aggregate(frames, ctx, 3)
    assert ctx.finite_result is summed
    one = compressor.decompress_aggregate(frames[:1], ctx, 1)
    assert ctx.finite_result is one and torch.isfinite(one).all()
    # Two ranks' largest entries at the same index, each finite, overflow when added.
    for g in gradients[:2]:
        g[7] = 3e38
    frames = [compressor.compress(g, "w")[0] for g in gradients]
    _, ctx = compressor.compress(gradients[2], "w")
    summed = compressor.decompress_aggregate(frames, ctx, 3)
    assert ctx.finite_result is None and torch.isinf(summed[7])
    poisoned = gradients[2].clone()
    poisoned[0] = float("nan")
    _, ctx = compressor.compress(poisoned, "w")
    assert ctx.finite_result is None
    marker = compressor.decompress_aggregate([compressor.compress(poisoned, "w")[0]], ctx, 1)
    assert ctx.finite_result is None and torch.isnan(marker).all()


@pytest.mark.parametrize("method", ["topk", "dgc", "threshold"])
def test_a_sparsifier_step_does_not_sweep_its_result_and_still_skips_a_nonfinite_one(method, monkeypatch):
    import deepreduce.base
    swept = []
    real = deepreduce.base.result_finite
    monkeypatch.setattr(deepreduce.base, "result_finite", lambda *a: swept.append(1) or real(*a))
    grc = grace_from_params({"compressor": method, "memory": "residual", "communicator": "allgather",
                             "compress_ratio": 0.01, "threshold": 1.5})
    n = 200_003
    for seed in range(3):
        result = grc.step(rank_gradient(seed, n), "w")
        assert torch.isfinite(result).all()
    assert swept == []
    residual = grc.memory.residuals["w"].clone()
    poisoned = rank_gradient(9, n)
    poisoned[n // 2] = float("nan")  # never among the selected: NaN ranks as magnitude zero
    assert torch.isnan(grc.step(poisoned, "w")).all()
    assert torch.equal(grc.memory.residuals["w"], residual), "the skipped step left the residual as it was"


def test_a_quantisers_sum_is_vouched_finite_by_its_last_addition_and_its_own_decode_by_lost():
    compressor = QSGDCompressor(127, 128)
    gradients = [rank_gradient(rank) for rank in range(3)]
    frames = [compressor.compress(g, "w")[0] for g in gradients]
    _, ctx = compressor.compress(gradients[0], "w")
    summed = compressor.decompress_aggregate(frames, ctx, 3)
    assert ctx.finite_result is summed and torch.isfinite(summed).all()
    # One rank: its own decode is known finite only once lost has made a finite residual.
    (frame,), ctx = compressor.compress(gradients[1], "w")
    compressor.decompress_aggregate([[frame]], ctx, 1)
    assert ctx.finite_result is None
    (frame,), ctx = compressor.compress(gradients[1], "w")
    compressor.lost(ctx.flat, [frame], ctx, np.empty(1000, dtype=np.float32))
    one = compressor.decompress_aggregate([[frame]], ctx, 1)
    assert ctx.finite_result is one
    # The entry that is its bucket's norm (sent as that norm: level s, with probability 1)
    # of two ranks at one index: each decode is finite, their sum is not.
    for g in gradients[:2]:
        g[7] = 3e38
    frames = [compressor.compress(g, "w")[0] for g in gradients]
    summed = compressor.decompress_aggregate(frames, ctx, 3)
    assert ctx.finite_result is None and torch.isinf(summed[7])


@pytest.mark.parametrize("method", ["qsgd", "terngrad", "8bit"])
def test_a_quantiser_step_with_residual_memory_does_not_sweep_its_result(method, monkeypatch):
    import deepreduce.base
    swept = []
    real = deepreduce.base.result_finite
    monkeypatch.setattr(deepreduce.base, "result_finite", lambda *a: swept.append(1) or real(*a))
    grc = grace_from_params({"compressor": method, "memory": "residual", "communicator": "allgather"})
    for seed in range(3):
        assert torch.isfinite(grc.step(rank_gradient(seed, 5000), "w")).all()
    assert swept == []
    residual = grc.memory.residuals["w"].clone()
    poisoned = rank_gradient(9, 5000)
    poisoned[17] = float("inf")
    assert torch.isnan(grc.step(poisoned, "w")).all()
    assert swept == [1], "a marker is not vouched for: the step sweeps it"
    assert torch.equal(grc.memory.residuals["w"], residual)


def test_a_sparsifier_subclass_with_its_own_aggregate_gets_it():
    class Loudest(TopKCompressor):
        def aggregate(self, tensors):
            return torch.stack(tensors).abs().amax(dim=0)

    compressor = Loudest(0.3)
    frames = [compressor.compress(rank_gradient(rank), "w")[0] for rank in range(3)]
    _, ctx = compressor.compress(rank_gradient(0), "w")
    expected = torch.stack([compressor.decompress(list(f), ctx) for f in frames]).abs().amax(dim=0) / 3
    assert torch.equal(compressor.decompress_aggregate(frames, ctx, 3), expected)
    assert torch.equal(Compressor.decompress_aggregate(compressor, frames, ctx, 3), expected)


@pytest.mark.parametrize("method", ["fp16", "powersgd"])
def test_an_allreduce_step_with_residual_memory_is_vouched_finite_by_its_decode(method, monkeypatch):
    # fp16's conversion and powersgd's product say whether they wrote Inf/NaN; the step
    # sweeps only a result they did not vouch for, and a skipped step keeps the residual.
    import deepreduce.base
    swept = []
    real = deepreduce.base.result_finite
    monkeypatch.setattr(deepreduce.base, "result_finite", lambda *a: swept.append(1) or real(*a))
    grc = grace_from_params({"compressor": method, "memory": "residual", "communicator": "allreduce"})
    shape = (50, 100)
    for seed in range(3):
        assert torch.isfinite(grc.step(rank_gradient(seed, 5000).view(shape), "w")).all()
    assert swept == []
    residual = grc.memory.residuals["w"].clone()
    poisoned = rank_gradient(9, 5000).view(shape)
    poisoned[3, 17] = 1e6  # float16's largest is 65504: Inf on the wire; powersgd: finite
    result = grc.step(poisoned, "w")
    if method == "fp16":
        assert torch.isinf(result[3, 17]) and swept == [1]
        assert torch.equal(grc.memory.residuals["w"], residual), "the skipped step left the residual as it was"
    else:
        assert torch.isfinite(result).all() and swept == []
    poisoned[3, 17] = float("nan")
    assert torch.isnan(grc.step(poisoned, "w")).any()
    assert swept[-1:] == [1]


def test_an_allreduce_sums_a_scratch_payload_in_place_and_copies_any_other():
    # fp16's payload is its own pool buffer: summed where it lies. 'none' sends the
    # (compensated) tensor itself, which an in-place sum would overwrite. The transport
    # here sums in place as gloo does, as if a second rank had sent the same tensor.
    from deepreduce.transports.local import LocalTransport

    class DoublingTransport(LocalTransport):
        def allreduce(self, array, name):
            self.given.append(array)
            array *= 2
            return array

    for method, expected in (("fp16", lambda g: 2 * g.half().float()), ("none", lambda g: 2 * g)):
        transport = DoublingTransport()
        transport.given = []
        grc = grace_from_params({"compressor": method, "memory": "none", "communicator": "allreduce",
                                 "transport": transport})
        payloads = []
        compress = grc.compressor.compress
        grc.compressor.compress = lambda t, name: payloads.append(compress(t, name)) or payloads[-1]
        g = rank_gradient(4, 5000)
        kept = g.clone()
        result = grc.step(g, "w")
        assert torch.equal(g, kept), "the caller's gradient is never summed into"
        assert torch.equal(result, expected(kept))
        (payload,), _ = payloads[0]
        assert np.shares_memory(transport.given[0], payload.numpy()) == (method == "fp16")


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_auto_offs_dense_steps_sum_in_the_steps_buffers_and_hand_back_their_own_results(kind):
    # auto_off's dense path copies the (compensated) tensor into a buffer the step keeps
    # for the name (Outputs.copy_of) and sums it there, where a fresh copy per step took
    # fresh pages each time (on a VM, 4 ms a step for 2.4 MB). The results stay the
    # caller's: never the buffer, never the gradient.
    from deepreduce.transports.local import LocalTransport

    class RecordingTransport(LocalTransport):
        def allreduce(self, array, name):
            if name.endswith("/dense"):
                self.given.append(address(array))  # not the array: a buffer held is not reused
            return array

    transport = RecordingTransport()
    transport.given = []
    # Under auto_off_min_numel elements a tensor goes dense by its size, every step.
    grc = grace_from_params({"compressor": "topk", "memory": "residual", "communicator": "allgather",
                             "compress_ratio": 0.01, "auto_off": True, "transport": transport})
    copies = []
    copy_of = grc.buffers.copy_of
    grc.buffers.copy_of = lambda name, array: copies.append(name) or copy_of(name, array)
    gradients = [gradient(kind, seed, n=3000) for seed in range(3)]
    kept = [snapshot(g) for g in gradients]
    results = [grc.step(g, "w") for g in gradients]
    assert copies == [("dense", "w")] * 3
    assert len(transport.given) == 3 and len(set(transport.given)) == 1, "one buffer, reused"
    for g, before, result in zip(gradients, kept, results):
        values = result.numpy() if torch.is_tensor(result) else result
        assert np.array_equal(values, before.numpy() if torch.is_tensor(before) else before)
        assert np.array_equal(g.numpy() if torch.is_tensor(g) else g, values), "the caller's gradient is untouched"
        assert address(values) != transport.given[0]


@pytest.mark.parametrize("params", [
    {"compressor": "topk", "memory": "residual", "compress_ratio": 0.01},
    {"compressor": "dgc", "memory": "dgc", "compress_ratio": 0.01},
    {"compressor": "sketch", "memory": "none"},
    {"compressor": "topk", "memory": "residual", "compress_ratio": 0.01, "deepreduce": "both",
     "index": "bloom", "value": "polyfit"},
], ids=["topk", "dgc", "sketch", "bloom+polyfit"])
def test_two_threads_stepping_one_communicator_get_the_sequential_results(params):
    """A compressor's scratch is shared by its tensors, and the C kernels run without the
    GIL: two threads stepping tensors 'a' and 'b' at once interleaved there ("invalid
    argument", wrong top-k selections, wrong sketches, unsaid). Steps take turns now."""
    import threading

    from deepreduce import deepreduce_from_params
    rng = np.random.default_rng(0)
    grads = {name: [rng.standard_normal(size).astype(np.float32) for _ in range(8)]
             for name, size in (("a", 200_000), ("b", 150_000))}
    params = dict(params, communicator="allgather", transport="local")

    def run(threaded):
        grc = deepreduce_from_params(dict(params))
        out = {name: [] for name in grads}

        def steps(name):
            for g in grads[name]:
                out[name].append(np.asarray(grc.step(g, name)).copy())
        workers = [threading.Thread(target=steps, args=(name,)) for name in grads]
        if threaded:
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        else:
            for name in grads:
                steps(name)
        return out

    sequential, threaded = run(False), run(True)
    for name in grads:
        assert len(threaded[name]) == 8
        assert all(np.array_equal(x, y) for x, y in zip(sequential[name], threaded[name])), name
