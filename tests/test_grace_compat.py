"""GRACE drop-in, in one process: the caller's tensor kind at every role boundary, the
non-finite marker frame, GRACE's names and helper functions, the deliberate differences
of docs/fixes.md, and the opt-out that lets a real GRACE checkout win. The multi-rank
half (custom parts mixed with ours, GradScaler, a script using GRACE's names) is in
test_grace_dropin.py."""
import copy
import io
import os
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import deepreduce  # noqa: E402
from deepreduce import FrameError, UnknownNameError, grace_from_params  # noqa: E402
from deepreduce._native import lib, nonfinite_frame  # noqa: E402
from deepreduce.codecs.index import NAMES as INDEX_NAMES  # noqa: E402
from deepreduce.codecs.value import NAMES as VALUE_NAMES  # noqa: E402
from deepreduce.memories.residual import ResidualMemory  # noqa: E402
from deepreduce.registry import COMPRESSORS  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
LOCAL = {"world_size": 1, "transport": "local"}
# Every compressor with the memory and communicator it runs with here (world size 1).
PAIRS = {name: ({"dgc": "dgc", "powersgd": "powersgd", "efsignsgd": "efsignsgd"}.get(name, "residual"),
                "allreduce" if name in ("none", "fp16", "randomk", "powersgd") else "allgather")
         for name in COMPRESSORS if COMPRESSORS[name] is not None}
PAIRS["lgc"] = ("none", "allreduce")  # LGC keeps its own error feedback and runs its own collectives


def local(compressor, **params):
    memory, communicator = PAIRS[compressor]
    return grace_from_params({"compressor": compressor, "memory": memory, "communicator": communicator,
                              **LOCAL, **params})


class Spy:
    """Wraps a role's method and records the type and shape of what it receives/returns."""

    def __init__(self):
        self.seen = []

    def watch(self, obj, method):
        original = getattr(obj, method)

        def spied(*args, **kwargs):
            out = original(*args, **kwargs)
            self.seen.append((method, args, out))
            return out
        setattr(obj, method, spied)


# ---------------------------------------------------------------------------- kinds
@pytest.mark.parametrize("compressor", ["topk", "qsgd", "randomk", "fp16", "dgc", "powersgd", "signum"])
@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_the_callers_kind_crosses_every_role(compressor, kind):
    grc = local(compressor)
    spy = Spy()
    spy.watch(grc.memory, "compensate")
    spy.watch(grc.compressor, "compress")
    spy.watch(grc.memory, "update")
    g = torch.randn(12, 10, dtype=torch.float64)
    x = g if kind == "torch" else g.numpy()
    for _ in range(2):
        out = grc.step(x, "w")
    expected = torch.Tensor if kind == "torch" else np.ndarray
    assert isinstance(out, expected) and tuple(out.shape) == (12, 10) and out.dtype == x.dtype
    for method, args, result in spy.seen:
        tensor = args[0]
        assert isinstance(tensor, expected), method
        assert tuple(tensor.shape) == (12, 10), method
        assert tensor.dtype in (torch.float32, np.float32), method  # the core's dtype, a view
        if method == "compress":
            payloads, _ = result
            assert all(isinstance(p, expected) for p in payloads), payloads
    if compressor in ("topk", "qsgd", "randomk"):  # residual: GRACE's name, the caller's kind
        assert isinstance(grc.memory.residuals["w"], expected)


@pytest.mark.parametrize("compressor", ["none", "fp16", "randomk", "powersgd", "topk", "qsgd", "signsgd"])
def test_a_decompress_written_elsewhere_gets_the_payloads_kind(compressor):
    """Our allreduce and allgather give our own decoders the payloads as NumPy (no round
    trip through torch) and a decompress written outside the package, against GRACE's
    classes with torch operations, torch tensors: a subclass that overrides only
    decompress gets torch, and the step's result is the same as with the class's own."""
    base = type(local(compressor).compressor)

    class TorchDecompress(base):  # defined here, outside deepreduce
        def decompress(self, tensors, ctx):
            assert all(isinstance(t, torch.Tensor) for t in tensors), [type(t) for t in tensors]
            return super().decompress(tensors, ctx)

    g = torch.randn(40, 25)
    ours = local(compressor)
    theirs = local(compressor)
    theirs.compressor.__class__ = TorchDecompress  # the memory keeps its link (powersgd's has one)
    for _ in range(3):
        assert torch.equal(ours.step(g, "w"), theirs.step(g, "w"))
    # A function set on the instance is written elsewhere too (a spy, a patch).
    ours, patched = local(compressor), local(compressor)
    decompress, aggregate = patched.compressor.decompress, patched.compressor.decompress_aggregate
    seen = []  # the kinds of the payloads each decoder got (allreduce decompresses, allgather aggregates)
    patched.compressor.decompress = lambda tensors, ctx: seen.append([type(t) for t in tensors]) or \
        decompress(tensors, ctx)
    patched.compressor.decompress_aggregate = lambda payloads, ctx, divisor=1: \
        seen.append([type(t) for payload in payloads for t in payload]) or aggregate(payloads, ctx, divisor)
    for _ in range(3):
        assert torch.equal(ours.step(g, "w"), patched.step(g, "w"))
    assert seen and all(kind is torch.Tensor for kinds in seen for kind in kinds), seen


@pytest.mark.parametrize("compressor", ["topk", "qsgd", "randomk", "signsgd"])
def test_a_decompress_set_on_the_instance_is_called_by_the_step(compressor):
    """A spy set on the instance's decompress alone (GRACE's way of watching a part) is
    called by the step, as a subclass's is: our summing of the payloads straight into one
    tensor stands in for decompress only where nobody changed it."""
    grc = local(compressor)
    spy = Spy()
    spy.watch(grc.compressor, "decompress")
    g = torch.randn(40, 25)
    assert torch.equal(grc.step(g, "w"), local(compressor).step(g, "w"))
    assert len(spy.seen) == 1


def test_none_sends_a_cpu_float32_tensor_itself_and_its_result_is_still_a_copy():
    grc = local("none")
    g = torch.randn(30, 7)
    (payload,), _ = grc.compressor.compress(g, "w")
    assert payload is g  # no view of it made: the payload crosses to NumPy once, in the exchange
    out = grc.step(g, "w")
    g.add_(1.0)  # the caller edits its gradient in place (accumulation, zero_grad without set_to_none)
    assert torch.equal(out + 1.0, g) and out.data_ptr() != g.data_ptr()


def test_a_cpu_float32_tensor_reaches_the_memory_as_a_view():
    grc = local("topk")
    seen = []
    grc.memory.compensate = lambda tensor, name: seen.append(tensor) or tensor
    g = torch.randn(100)
    grc.step(g, "w")
    assert seen[0].data_ptr() == g.data_ptr()


# ------------------------------------------------------- top-k with residual memory, fused
class ResidualByRoles(ResidualMemory):
    """GRACE's way of extending a memory, a subclass with its own compensate: the step
    then calls compensate, compress and update one by one."""

    def compensate(self, tensor, name):
        return super().compensate(tensor, name)


def topk_residual(beta=1.0, gamma=1.0, memory=None, **params):
    grc = grace_from_params({"compressor": "topk", "memory": "residual", "communicator": "allgather",
                             "compress_ratio": 0.3, **LOCAL, **params})
    grc.memory = (memory or ResidualMemory)(beta, gamma)
    return grc


def count_fused_calls(monkeypatch):
    """The calls the step makes to top-k's one-call path, recorded by tensor name."""
    from deepreduce.compressors.topk import TopKCompressor
    calls, fused = [], TopKCompressor.compress_compensating

    def counted(self, grad, numel, restore, name, *args):
        calls.append(name)
        return fused(self, grad, numel, restore, name, *args)
    monkeypatch.setattr(TopKCompressor, "compress_compensating", counted)
    return calls


def as_bits(x):
    x = x.detach().numpy() if torch.is_tensor(x) else np.asarray(x)
    return x.tobytes(), x.dtype, x.shape


KINDS = {"torch": lambda v: torch.from_numpy(v), "numpy": lambda v: v,
         "torch-float16": lambda v: torch.from_numpy(v).half(), "numpy-float64": lambda v: v.astype(np.float64),
         "torch-transposed": lambda v: torch.from_numpy(v).reshape(-1, 10).t()}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("n", [1000, 200_010, 0], ids=["1k", "200k", "empty"])
def test_topk_with_residual_is_one_c_call_with_the_bits_and_state_of_the_roles(monkeypatch, kind, n):
    """The step's compensate, compress and update are one C call for our residual memory
    with top-k (``fused_encode``): results, residuals and bytes sent are those of the
    three calls, bit for bit, through steps whose tensor holds a NaN (sent as the marker,
    the residual kept as it was) or whose compensation overflows to Inf."""
    calls = count_fused_calls(monkeypatch)
    fused, roles = topk_residual(0.9, 1.1), topk_residual(0.9, 1.1, ResidualByRoles)
    sent = {fused: [], roles: []}  # the frames each put on the wire
    for grc in sent:
        def gather(payload, name, frames=sent[grc], transport=grc.transport):
            frames.append(np.asarray(payload).tobytes())
            return type(transport).allgather(transport, payload, name)
        grc.transport.allgather = gather
    rng = np.random.default_rng(3)
    for step in range(7):
        values = rng.standard_normal(n).astype(np.float32)
        if step == 3 and n:
            values[n // 2] = np.nan
        if step == 5 and n:
            values[n // 3] = 3.3e38  # finite, but 1.1 times it is not
        g = KINDS[kind](values)
        got, want = fused.step(g, "w"), roles.step(g, "w")
        assert as_bits(got) == as_bits(want), f"step {step}"
        if step in (3, 5) and n:
            assert not np.isfinite(np.asarray(got, dtype=np.float32)).all()
        assert as_bits(fused.memory.residuals["w"]) == as_bits(roles.memory.residuals["w"]), f"step {step}"
    assert sent[fused] == sent[roles] and len(sent[fused]) == 7
    assert calls == ["w"] * 7  # the roles' run never took it


def test_topk_with_residual_is_graces_recipe():
    """Against GRACE's own recipe in torch ops: compensate, torch.topk of the magnitudes,
    the dense tensor of the chosen entries, and the residual as the rest."""
    grc = topk_residual()
    residual = None
    for seed in range(5):
        g = torch.randn(40, 25, generator=torch.Generator().manual_seed(seed))
        compensated = g if residual is None else residual + g
        flat = compensated.flatten()
        _, chosen = torch.topk(flat.abs(), int(flat.numel() * 0.3))
        want = torch.zeros_like(flat)
        want[chosen] = flat[chosen]
        residual = compensated - want.view_as(g)
        got = grc.step(g, "w")
        assert torch.equal(got, want.view_as(g))
        assert torch.equal(grc.memory.residuals["w"], residual)


def test_the_fused_call_keeps_nothing_of_a_non_finite_tensor_by_itself():
    """As the memory's update keeps nothing of a tensor holding a NaN, ``fused_encode``
    leaves the residual as it was, before any rollback of the step's."""
    grc = topk_residual()
    g = torch.randn(300)
    grc.step(g, "w")
    residual = grc.memory.residuals["w"].clone()
    g[7] = float("nan")
    (frame,), ctx = grc.memory.fused_encode(g, "w", grc.compressor)
    assert not ctx.finite and frame.numel() == lib.DR_FRAME_NONFINITE_SIZE
    assert torch.equal(grc.memory.residuals["w"], residual)


@pytest.mark.parametrize("ratio", [0.01, 0.3])  # the frame's index lists; its bitmap (select.h)
def test_the_fused_calls_ctx_names_the_entries_it_sent(ratio):
    """The fused call's ctx keeps no index array: its ``indices`` are read from the frame
    when asked for (a memory's ``lost`` asks), in either layout, and are those of the
    selection."""
    grc = topk_residual(compress_ratio=ratio)
    g = torch.randn(5000, generator=torch.Generator().manual_seed(1))
    (frame,), ctx = grc.memory.fused_encode(g, "w", grc.compressor)
    k = int(5000 * ratio)
    _, chosen = torch.topk(g.abs(), k)
    assert frame.numel() == 56 + min(8 * k, 625 + 4 * k)
    assert ctx.indices.dtype == np.uint32
    assert np.array_equal(ctx.indices, np.sort(chosen.numpy()).astype(np.uint32))


def _overrides():
    """Ways GRACE users change one of the parts the fused call stands in for, each with
    the method that must then be called."""
    from deepreduce.compressors.topk import TopKCompressor

    class OwnCompress(TopKCompressor):
        def compress(self, tensor, name):
            return super().compress(tensor, name)

    class OwnSelect(TopKCompressor):
        def select(self, flat, name):
            return super().select(flat, name)

    class OwnUpdate(ResidualMemory):
        def update(self, *args):
            return super().update(*args)

    def patch(part, method):
        def apply(grc):
            obj = getattr(grc, part)
            original = getattr(obj, method)
            setattr(obj, method, lambda *args: original(*args))
        return apply

    def replace(part, cls):
        def apply(grc):
            setattr(grc, part, cls(0.3, "torch") if part == "compressor" else cls())
        return apply

    return {"compressor subclass: compress": (replace("compressor", OwnCompress), "compressor", "compress"),
            "compressor subclass: select": (replace("compressor", OwnSelect), "compressor", "select"),
            "memory subclass: update": (replace("memory", OwnUpdate), "memory", "update"),
            "memory instance: compensate": (patch("memory", "compensate"), "memory", "compensate"),
            "compressor instance: lost": (patch("compressor", "lost"), "compressor", "lost")}


@pytest.mark.parametrize("override", sorted(_overrides()))
def test_a_part_changed_elsewhere_is_called_instead_of_the_fused_call(monkeypatch, override):
    calls = count_fused_calls(monkeypatch)
    apply, part, method = _overrides()[override]
    grc, plain = topk_residual(), topk_residual()
    apply(grc)
    spy = Spy()
    spy.watch(getattr(grc, part), method)
    for seed in range(3):
        g = torch.randn(500, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(grc.step(g, "w"), plain.step(g, "w"))
    assert len(spy.seen) >= 3 and calls == ["w"] * 3  # only the plain run fused


# ---------------------------------------------------------------------------- non-finite
@pytest.mark.parametrize("compressor", sorted(PAIRS))
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_gradient_gives_a_non_finite_result_and_keeps_the_state(compressor, bad):
    grc = local(compressor)
    g = torch.randn(20, 60)
    for _ in range(2):
        grc.step(g, "w")
    before = {attr: {k: v.clone() for k, v in d.items()} for obj in (grc.memory, grc.compressor)
              for attr, d in vars(obj).items() if isinstance(d, dict) and d and
              all(isinstance(v, torch.Tensor) for v in d.values())}
    broken = g.clone()
    broken[3, 7] = bad
    out = grc.step(broken, "w")
    assert not bool(torch.isfinite(out).all())
    after = {attr: d for obj in (grc.memory, grc.compressor) for attr, d in vars(obj).items() if attr in before}
    for attr, tensors in before.items():
        for k, v in tensors.items():
            assert torch.equal(v, after[attr][k]), f"{attr}[{k!r}] changed"
    assert bool(torch.isfinite(grc.step(g, "w")).all())  # the next finite step is finite again


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # the point of the test
@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_a_float16_result_that_overflows_on_the_way_back_is_skipped_and_keeps_the_state(kind):
    """The decoders vouch for float32 values; a float16 caller's result is cast after
    that, and a finite float32 sum past 65504 becomes Inf there: the step is then
    non-finite, and the residual is taken back as for any non-finite step."""
    grc = grace_from_params({"compressor": "topk", "memory": "residual", "communicator": "allgather",
                             "compress_ratio": 0.5, **LOCAL})
    g = torch.full((8,), 60000.0, dtype=torch.float16)
    x = g if kind == "torch" else g.numpy()
    grc.step(x, "w")  # half of the entries stay behind as residuals of 60000
    residual = np.asarray(grc.memory.residuals["w"]).copy()
    out = np.asarray(grc.step(x, "w"))  # those entries now carry 120000: Inf in float16
    assert out.dtype == np.float16 and not np.isfinite(out).all()
    assert np.array_equal(np.asarray(grc.memory.residuals["w"]), residual), "the skipped step left the residual"


@pytest.mark.parametrize("compressor", ["topk", "threshold", "qsgd", "signsgd", "terngrad"])
def test_the_frame_carries_the_fact_not_the_garbage(compressor):
    c = local(compressor).compressor
    g = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    g[17] = np.nan
    (frame,), ctx = c.compress(g, "w")
    assert frame.nbytes == lib.DR_FRAME_NONFINITE_SIZE
    assert np.isnan(c.decompress([frame], ctx)).all()


@pytest.mark.parametrize("compressor", ["qsgd", "inceptionn", "adaq"])
def test_the_encoders_own_sweep_refuses_non_finite_input(compressor, monkeypatch):
    """inceptionn and adaq as qsgd: the encoder refuses an Inf or a NaN in the sweep it
    makes anyway (no finiteness pass of its own), the marker frame travels instead, and a
    NaN gradient's step is NaN in every entry."""
    import deepreduce.compressors._framed as framed_module
    grc = local(compressor)
    g = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    g[17] = np.nan
    assert grc.compressor.encode(g, "w") is None
    monkeypatch.setattr(framed_module, "all_finite", lambda flat: pytest.fail("a separate finiteness pass"))
    (frame,), _ = grc.compressor.compress(g, "w")
    assert frame.nbytes == lib.DR_FRAME_NONFINITE_SIZE
    assert torch.isnan(grc.step(torch.from_numpy(g), "w")).all()


def test_a_forged_marker_is_refused():
    topk = local("topk").compressor
    (frame,), ctx = topk.compress(np.ones(100, dtype=np.float32), "w")
    with pytest.raises(FrameError, match="codec"):  # a marker of another compressor
        topk.decompress([nonfinite_frame(lib.DR_KIND_THRESHOLD, 100)], ctx)
    with pytest.raises(FrameError):  # a marker for a tensor of another size
        topk.decompress([nonfinite_frame(lib.DR_KIND_TOPK, 99)], ctx)
    flipped = frame.copy()
    flipped[10] |= lib.DR_FRAME_FLAG_NONFINITE  # a real frame claiming to be a marker
    with pytest.raises(FrameError, match="checksum|CRC"):
        topk.decompress([flipped], ctx)


def test_sign_vote_keeps_nan():
    grc = local("signsgd")
    g = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    g[5] = np.inf
    assert np.isnan(grc.step(g, "w")).all()


# ---------------------------------------------------------------------------- names
@pytest.mark.parametrize("role", ["compressor", "memory", "communicator"])
def test_unknown_names_are_notimplemented_and_valueerror_with_the_valid_names(role):
    with pytest.raises(NotImplementedError, match="valid names: .*") as info:
        grace_from_params({role: "no-such-thing"})
    assert isinstance(info.value, ValueError) and isinstance(info.value, UnknownNameError)
    from deepreduce.codecs import index_codec
    with pytest.raises(NotImplementedError, match="rice"):
        index_codec("no-such-codec")


@pytest.mark.parametrize("name, cls, base", [("qsgd_cuda", "QSGDCompressor_CUDA", "QSGDCompressor"),
                                             ("natural_cuda", "NaturalCompressor_CUDA", "NaturalCompressor")])
def test_cuda_names_run_the_c_core(name, cls, base):
    import importlib
    grc = grace_from_params({"compressor": name, "communicator": "allgather", **LOCAL})
    module = importlib.import_module(f"grace_dl.dist.compressor.{name.split('_')[0]}")
    assert type(grc.compressor) is getattr(module, cls)
    assert isinstance(grc.compressor, getattr(module, base))
    g = torch.randn(1000)
    out = grc.step(g, "w")
    assert out.shape == g.shape and float((out - g).abs().mean()) < float(g.abs().mean())


def test_topk_helpers_behave_as_graces():
    from grace_dl.dist.compressor.topk import desparsify, sparsify
    g = torch.randn(7, 50)
    values, indices = sparsify(g, 0.1, "torch")
    assert values.dtype == g.dtype and indices.dtype == torch.int32 and values.numel() == 35
    _, expected = torch.topk(g.flatten().abs(), 35)
    assert set(indices.tolist()) == set(expected.tolist())
    assert torch.equal(values, g.flatten()[indices.long()])
    dense = desparsify((values, indices), g.numel())
    assert torch.equal(dense[indices.long()], values) and int((dense != 0).sum()) == 35
    v, i = sparsify(g.numpy(), 0.1)
    assert isinstance(v, np.ndarray) and np.array_equal(np.sort(i), np.sort(indices.numpy()))
    with pytest.raises(ValueError, match="indices"):
        desparsify((values, indices + 1000), g.numel())


def test_randomk_helper_follows_the_global_generator_and_draws_distinct_indices():
    from grace_dl.dist.compressor.randomk import sparsify
    g = torch.randn(1000)
    torch.manual_seed(3)
    a_idx, a_val = sparsify(g, 0.05)
    torch.manual_seed(3)
    b_idx, _ = sparsify(g, 0.05)
    assert torch.equal(a_idx, b_idx) and a_idx.dtype == torch.int64
    assert a_idx.unique().numel() == 50 and torch.equal(a_val, g[a_idx])


def graces_orthogonalize(matrix):
    """GRACE's Gram-Schmidt, written out in torch as its powersgd.py does it."""
    for i in range(matrix.shape[1]):
        col = matrix[:, i:i + 1]
        col /= torch.sqrt(torch.sum(col ** 2))
        if i + 1 < matrix.shape[1]:
            rest = matrix[:, i + 1:]
            rest -= torch.sum(col * rest, dim=0) * col


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_orthogonalize_works_in_place_as_graces(dtype):
    from grace_dl.dist.compressor.powersgd import orthogonalize
    m = torch.randn(9, 3, dtype=dtype)
    theirs = m.clone()
    graces_orthogonalize(theirs)
    assert orthogonalize(m) is None
    assert torch.allclose(m, theirs, atol=1e-5)
    zero = torch.zeros(4, 2)
    orthogonalize(zero)
    assert torch.equal(zero, torch.zeros(4, 2))  # GRACE's gives NaN here


def test_powersgd_constructor_is_graces():
    from grace_dl.dist.compressor.powersgd import PowerSGDCompressor
    c = PowerSGDCompressor()
    assert (c.rank, c.use_memory) == (1, False)
    assert PowerSGDCompressor(2, True, 4).world_size == 4
    grc = grace_from_params({"compressor": "powersgd", "memory": "powersgd", **LOCAL})
    assert grc.compressor.use_memory and grc.compressor.world_size == 1
    wrong = grace_from_params({"compressor": "powersgd", "memory": "powersgd", **LOCAL})
    wrong.compressor = PowerSGDCompressor(1, True, 3, transport="local")
    with pytest.raises(deepreduce.CommunicationError, match="world_size=3 but the local transport has 1"):
        wrong.step(torch.randn(4, 4), "w")


def test_state_attribute_names_are_graces():
    signum = local("signum")
    randomk = local("randomk")
    dgc = local("dgc")
    for grc in (signum, randomk, dgc):
        grc.step(torch.randn(30), "a")
        grc.step(torch.randn(40), "b")
    assert sorted(signum.compressor.momentums) == ["a", "b"]
    assert randomk.compressor.global_step == 2
    assert sorted(dgc.memory.residuals) == sorted(dgc.memory.gradients) == ["a", "b"]
    assert all(isinstance(v, torch.Tensor) for v in dgc.memory.gradients.values())


@pytest.mark.parametrize("compressor", sorted(PAIRS))
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_memory_and_compressor_in_use_copy_and_pickle_and_the_copy_goes_on_as_the_original(compressor, how):
    """GRACE's roles held dicts of tensors, which a checkpoint pickles and
    ``copy.deepcopy`` copies; ours keep C pointers beside their buffers after a step,
    which neither can. A copy made after some steps (the pools empty, the state's
    entries alone) then steps with the bits the original steps with."""
    import pickle
    duplicate = copy.deepcopy if how == "deepcopy" else (lambda obj: pickle.loads(pickle.dumps(obj)))
    torch.manual_seed(0)
    grads = [torch.randn(40, 25) for _ in range(6)]
    original = local(compressor)
    for g in grads[:3]:
        original.step(g, "w")
    copied = local(compressor)
    copied.compressor, copied.memory = duplicate(original.compressor), duplicate(original.memory)
    for step, g in enumerate(grads[3:]):
        assert as_bits(copied.step(g, "w")) == as_bits(original.step(g, "w")), f"step {step}"


@pytest.mark.parametrize("deepreduce_kind, codec", [("index", name) for name in INDEX_NAMES] +
                         [("value", name) for name in VALUE_NAMES])
def test_a_deepreduce_wrapper_in_use_pickles_with_its_codecs(deepreduce_kind, codec):
    """DeepReduce's wrappers, as their users build them, pickled after some steps: their
    codecs keep C functions, which pickle by the codec's name."""
    import pickle
    from deepreduce.wrappers import IndexCompressor, ValueCompressor
    params = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.05,
              "deepreduce": deepreduce_kind, deepreduce_kind: codec, **LOCAL}
    wrapper = {"index": IndexCompressor, "value": ValueCompressor}[deepreduce_kind]
    torch.manual_seed(0)
    grads = [torch.randn(2000) for _ in range(5)]
    original = grace_from_params(params)
    original.compressor = wrapper(original.compressor, params)
    for g in grads[:3]:
        original.step(g, "w")
    copied = grace_from_params(params)
    copied.compressor, copied.memory = pickle.loads(pickle.dumps((original.compressor, original.memory)))
    for step, g in enumerate(grads[3:]):
        assert as_bits(copied.step(g, "w")) == as_bits(original.step(g, "w")), f"step {step}"


def test_a_checkpoint_holds_the_state_not_the_scratch():
    """torch.save(grc) held top-k's selection workspace beside the residual: 5 MB for a
    million-element tensor whose residual is 4 MB. (SparDL's codec scratch likewise.)"""
    grc = local("topk", compress_ratio=0.01)
    g = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    grc.step(g, "w")
    assert grc.compressor._work.nbytes > 100_000  # grown by the step
    assert len(pickle.dumps(grc)) < 4_000_000 + 20_000


@pytest.mark.parametrize("compressor, memory, owner, attribute", [
    ("topk", "residual", "memory", "residuals"),  # the fused top-k step
    ("qsgd", "residual", "memory", "residuals"),
    ("dgc", "dgc", "memory", "residuals"),
    ("dgc", "dgc", "memory", "gradients"),
    ("signum", "none", "compressor", "momentums"),
])
def test_state_dicts_take_a_plain_dict_as_graces_did(compressor, memory, owner, attribute):
    """GRACE kept its state in plain dicts, which a script may assign: a checkpoint's dict
    to resume (the steps after it are the original's, bit for bit), or {} to start afresh
    (the steps are a fresh communicator's)."""
    params = {"compressor": compressor, "memory": memory,
              "communicator": "allgather", "compress_ratio": 0.05, **LOCAL}
    torch.manual_seed(0)
    grads = [torch.randn(1000) for _ in range(6)]
    original = grace_from_params(params)
    for g in grads[:3]:
        original.step(g, "w")
    saved = {k: v.clone() for k, v in getattr(getattr(original, owner), attribute).items()}
    want = [original.step(g, "w") for g in grads[3:]]
    resumed = grace_from_params(params)
    for g in grads[:3]:  # the rest of its state as the original's
        resumed.step(g, "w")
    setattr(getattr(resumed, owner), attribute, dict(saved))
    assert [as_bits(resumed.step(g, "w")) for g in grads[3:]] == [as_bits(w) for w in want]
    reset = grace_from_params(params)
    reset.step(grads[0], "w")
    setattr(getattr(reset, owner), attribute, {})
    if memory == "dgc":  # its two dicts go together
        reset.memory.residuals, reset.memory.gradients = {}, {}
    fresh = grace_from_params(params)
    if owner == "memory":  # a fresh memory beside the compressor's own state (qsgd's and dgc's draws)
        fresh.compressor = copy.deepcopy(reset.compressor)
    assert [as_bits(reset.step(g, "w")) for g in grads[3:]] == [as_bits(fresh.step(g, "w")) for g in grads[3:]]


@pytest.mark.parametrize("compressor, memory, owner, attribute", [
    ("dgc", "dgc", "memory", "residuals"),
    ("dgc", "dgc", "memory", "gradients"),
    ("signum", "none", "compressor", "momentums"),
])
def test_a_state_of_another_size_is_refused_and_of_another_dtype_resumed(compressor, memory, owner, attribute):
    """A checkpoint's entry of another size (another model's) was taken for no entry: DGC's
    and signum's state started afresh without a word, where the residual memory refused
    it; one of another dtype (float64, assigned by hand) was dropped the same way."""
    params = {"compressor": compressor, "memory": memory,
              "communicator": "allgather", "compress_ratio": 0.05, **LOCAL}
    torch.manual_seed(0)
    grads = [torch.randn(1000) for _ in range(4)]
    original = grace_from_params(params)
    original.step(grads[0], "w")
    saved = {k: v.clone() for k, v in getattr(getattr(original, owner), attribute).items()}
    wider = grace_from_params(params)
    wider.step(grads[0], "w")
    setattr(getattr(wider, owner), attribute, {"w": torch.zeros(2000)})
    with pytest.raises(ValueError, match="tensor 'w' has 1000 elements but the state kept for it has 2000"):
        wider.step(grads[1], "w")
    as_double = copy.deepcopy(original)
    setattr(getattr(as_double, owner), attribute, {"w": saved["w"].double()})
    assert as_bits(as_double.step(grads[1], "w")) == as_bits(original.step(grads[1], "w"))


@pytest.mark.parametrize("compressor, held", [
    ("topk", (("memory", "residuals"),)),
    ("dgc", (("memory", "residuals"), ("memory", "gradients"))),
    ("signum", (("compressor", "momentums"), ("memory", "residuals"))),
])
def test_state_dicts_in_a_checkpoint_load_with_torch_loads_default(tmp_path, compressor, held):
    """A GRACE script's checkpoint holds the state dicts themselves, as GRACE's plain dicts
    of tensors: ``torch.load``'s default (weights_only) loads it, and the dicts assigned
    back resume the steps bit for bit. (Our dict class was refused there before.)"""
    grc = local(compressor)
    model = torch.nn.Linear(4, 2)
    for _ in range(3):
        grc.step(torch.randn(1000), "w")
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": model.state_dict(), **{f"{owner}.{n}": getattr(getattr(grc, owner), n) for owner, n in held}},
               path)
    checkpoint = torch.load(path)
    resumed = local(compressor)
    if compressor == "dgc":  # its draws are the compressor's own state, outside the checkpoint
        resumed.compressor = copy.deepcopy(grc.compressor)
    for owner, n in held:
        saved, kept = checkpoint[f"{owner}.{n}"], getattr(getattr(grc, owner), n)
        assert list(saved) == ["w"] and torch.equal(saved["w"], kept["w"])
        setattr(getattr(resumed, owner), n, saved)
    for _ in range(3):
        g = torch.randn(1000)
        assert as_bits(resumed.step(g, "w")) == as_bits(grc.step(g, "w"))


# ---------------------------------------------------------------------------- fixes.md
def test_threshold_rule_is_magnitude_at_or_above_the_threshold():
    """GRACE selects |x| >= min(threshold, max(x)) with the signed max: a tensor of small
    negative entries would be sent whole. Ours sends |x| >= threshold, possibly nothing."""
    grc = local("threshold", threshold=0.01)
    x = np.array([-0.5, -0.001, -0.002, -0.0005], dtype=np.float32)
    (frame,), ctx = grc.compressor.compress(x, "w")
    np.testing.assert_array_equal(grc.compressor.decompress([frame], ctx), [-0.5, 0, 0, 0])
    (frame,), ctx = grc.compressor.compress(x / 100, "w")  # all below: an empty, legal payload
    assert not grc.compressor.decompress([frame], ctx).any()


def test_signum_momentum_is_a_copy_of_the_gradient_not_the_gradient():
    """GRACE stored the caller's tensor itself as the first momentum, so a training loop
    that writes the result back into p.grad changed GRACE's momentum too."""
    grc = local("signum")
    grad = torch.tensor([1.0, -2.0, 3.0])
    grad.copy_(grc.step(grad, "w"))  # the loop writes the vote into the gradient
    assert torch.equal(grc.compressor.momentums["w"], torch.tensor([1.0, -2.0, 3.0]))


def test_randomk_indices_are_distinct_and_shared_by_name_and_global_step():
    a = local("randomk", compress_ratio=0.5).compressor
    b = local("randomk", compress_ratio=0.5).compressor
    x = np.arange(1, 101, dtype=np.float32)
    (va,), ca = a.compress(x, "w")
    (vb,), cb = b.compress(x, "w")
    assert np.unique(ca.indices).size == 50 and np.array_equal(ca.indices, cb.indices)
    (_,), later = a.compress(x, "w")
    assert not np.array_equal(later.indices, ca.indices)  # global_step moved on


# ---------------------------------------------------------------------------- beside a GRACE checkout
def test_real_grace_on_pythonpath_wins_with_the_opt_out(tmp_path):
    (tmp_path / "grace_dl" / "dist").mkdir(parents=True)
    (tmp_path / "grace_dl" / "__init__.py").write_text("WHO = 'GRACE'\n")
    (tmp_path / "grace_dl" / "dist" / "__init__.py").write_text("")
    (tmp_path / "grace_dl" / "dist" / "helper.py").write_text("def grace_from_params(params):\n    return 'GRACE'\n")
    script = ("import grace_dl.dist.helper as h, deepreduce; "
              "print(h.grace_from_params({}), h.__file__.startswith(%r), deepreduce.__name__)" % str(tmp_path))
    env = dict(os.environ, PYTHONPATH=str(tmp_path), DEEPREDUCE_GRACE_DL="off")
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.stdout.split() == ["GRACE", "True", "deepreduce"], run.stderr
    env.pop("DEEPREDUCE_GRACE_DL")
    run = subprocess.run([sys.executable, "-c", "import grace_dl.dist.helper as h; print(h.__name__, h.grace_from_params)"],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert "deepreduce" in run.stdout or "function grace_from_params" in run.stdout, run.stderr
    env.update(DEEPREDUCE_GRACE_DL="off", PYTHONPATH="")
    run = subprocess.run([sys.executable, "-c", "import grace_dl"], env=env, capture_output=True, text=True,
                         cwd=ROOT / "docs")
    assert "none is on sys.path" in run.stderr
