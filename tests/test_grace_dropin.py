"""GRACE drop-in on real gloo ranks: users' own GRACE-style parts mixed with ours, mixed
precision with a forced overflow, and a script that uses GRACE's names for things.

Each test is one spawn that loops over its cases inside the workers (spawning is the
expensive part)."""
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import distributed  # noqa: E402
import grace_custom_parts as custom  # noqa: E402
import grace_loop  # noqa: E402

pytestmark = pytest.mark.slow

# ------------------------------------------------------------ custom parts x built-ins
# Allreduce needs payloads that add up (fp16 and random-k values); allgather takes any.
SUMMABLE = ["custom-fp16", "fp16", "randomk"]
COMPRESSORS = SUMMABLE + ["topk", "qsgd"]
MEMORIES = ["custom-residual", "residual", "none"]
COMMUNICATORS = ["custom-allreduce", "custom-allgather", "allreduce", "allgather"]
COMBINATIONS = [(c, m, comm) for c, m, comm in itertools.product(COMPRESSORS, MEMORIES, COMMUNICATORS)
                if c in SUMMABLE or not comm.endswith("allreduce")]


def build(compressor, memory, communicator, world_size):
    """The communicator as a GRACE user assembles it from classes (GRACE's import paths for
    ours, the user's own module for theirs)."""
    from grace_dl.dist.communicator.allgather import Allgather
    from grace_dl.dist.communicator.allreduce import Allreduce
    from grace_dl.dist.compressor.fp16 import FP16Compressor
    from grace_dl.dist.compressor.qsgd import QSGDCompressor
    from grace_dl.dist.compressor.randomk import RandomKCompressor
    from grace_dl.dist.compressor.topk import TopKCompressor
    from grace_dl.dist.memory.none import NoneMemory
    from grace_dl.dist.memory.residual import ResidualMemory
    compressors = {"custom-fp16": custom.TorchFP16Compressor, "fp16": FP16Compressor,
                   "randomk": lambda: RandomKCompressor(0.3), "topk": lambda: TopKCompressor(0.3),
                   "qsgd": lambda: QSGDCompressor(127, 128)}
    memories = {"custom-residual": custom.TorchResidualMemory, "residual": ResidualMemory, "none": NoneMemory}
    communicators = {"custom-allreduce": custom.TorchAllreduce, "custom-allgather": custom.TorchAllgather,
                     "allreduce": Allreduce, "allgather": Allgather}
    return communicators[communicator](compressors[compressor](), memories[memory](), world_size)


def _train_every_combination(rank, world_size):
    results = {}
    for combo in COMBINATIONS:
        grc = build(*combo, world_size)
        results[combo] = grace_loop.train(rank, world_size, None, steps=20, grc=grc)
    return results


@pytest.fixture(scope="module")
def mixed():
    return distributed.run(_train_every_combination, 2, timeout=600, pg_timeout=60)


@pytest.mark.parametrize("combo", COMBINATIONS, ids="/".join)
def test_custom_grace_parts_mix_with_builtins(mixed, combo):
    flat0, losses, accuracy = mixed[0][combo]
    flat1 = mixed[1][combo][0]
    assert flat0.tobytes() == flat1.tobytes()  # every rank applied the same update
    assert losses[-1] < 0.5 * losses[0], losses
    assert accuracy >= 0.9


# ------------------------------------------------------------ mixed precision, forced overflow
OVERFLOW_STEP = 4
STEPS = 12
AMP_CASES = {
    "topk": {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.3},
    "qsgd": {"compressor": "qsgd", "memory": "residual", "communicator": "allgather"},
    "terngrad": {"compressor": "terngrad", "memory": "residual", "communicator": "allgather"},
    "signsgd": {"compressor": "signsgd", "memory": "residual", "communicator": "allgather"},
    "signum": {"compressor": "signum", "memory": "none", "communicator": "allgather"},
    "powersgd": {"compressor": "powersgd", "memory": "powersgd", "communicator": "allreduce"},
    "dgc": {"compressor": "dgc", "memory": "dgc", "communicator": "allgather", "compress_ratio": 0.3},
    "randomk": {"compressor": "randomk", "memory": "residual", "communicator": "allreduce"},
    "deepreduce": {"compressor": "topk", "memory": "residual", "communicator": "allgather",
                   "compress_ratio": 0.3, "deepreduce": "both", "index": "rice", "value": "qsgd", "min_numel": 10},
}


def state_of(grc):
    """Every per-tensor state the communicator's memory and compressor keep, copied."""
    snapshot = {}
    for owner, obj in (("memory", grc.memory), ("compressor", getattr(grc.compressor, "sparsifier", grc.compressor))):
        for attr, value in vars(obj).items():
            if isinstance(value, dict) and value and all(isinstance(v, torch.Tensor) for v in value.values()):
                snapshot[f"{owner}.{attr}"] = {k: v.clone() for k, v in value.items()}
    return snapshot


def _amp_run(rank, world_size, params):
    import torch.nn.functional as F
    from deepreduce import deepreduce_from_params
    model = grace_loop.make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    grc = deepreduce_from_params(params)
    inputs, labels = grace_loop.synthetic_task()
    shard = torch.arange(rank, inputs.shape[0], world_size)
    record = {"losses": []}
    for step in range(STEPS):
        idx = shard[(step * 32) % shard.numel():][:32]
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(inputs[idx]), labels[idx])
        if step == OVERFLOW_STEP and rank == 0:
            loss = loss * float("inf")  # only rank 0 overflows
        scaler.scale(loss).backward()
        if step == OVERFLOW_STEP:
            record["state_before"] = state_of(grc)
            record["params_before"] = [p.detach().clone() for p in model.parameters()]
            record["scale_before"] = scaler.get_scale()
        for name, p in model.named_parameters():
            p.grad.copy_(grc.step(p.grad, name))
        if step == OVERFLOW_STEP:
            record["grads_finite"] = all(bool(torch.isfinite(p.grad).all()) for p in model.parameters())
        scaler.step(optimizer)
        scaler.update()
        if step == OVERFLOW_STEP:
            record["state_after"] = state_of(grc)
            record["params_after"] = [p.detach().clone() for p in model.parameters()]
            record["scale_after"] = scaler.get_scale()
        with torch.no_grad():
            record["losses"].append(F.cross_entropy(model(inputs), labels).item())
    record["final"] = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
    return record


def _amp_every_case(rank, world_size):
    return {case: _amp_run(rank, world_size, params) for case, params in AMP_CASES.items()}


@pytest.fixture(scope="module")
def amp():
    return distributed.run(_amp_every_case, 2, timeout=600, pg_timeout=60)


@pytest.mark.parametrize("case", list(AMP_CASES))
def test_gradscaler_skips_an_overflow_on_one_rank_and_memories_stay(amp, case):
    for rank in (0, 1):
        r = amp[rank][case]
        assert not r["grads_finite"], f"rank {rank}: the aggregate must be non-finite on every rank"
        assert r["scale_after"] < r["scale_before"], "the scaler saw the overflow and lowered its scale"
        for before, after in zip(r["params_before"], r["params_after"]):
            assert torch.equal(before, after), "the overflowed step was skipped"
        assert r["state_before"].keys() == r["state_after"].keys()
        for attr, tensors in r["state_before"].items():
            assert tensors.keys() == r["state_after"][attr].keys(), attr
            for name, value in tensors.items():
                assert torch.equal(value, r["state_after"][attr][name]), f"rank {rank}: {attr}[{name!r}] changed"
        losses = r["losses"]
        assert all(np.isfinite(losses)), "the run continued with finite parameters"
        assert losses[-1] < losses[OVERFLOW_STEP], "training went on after the skipped step"
    assert amp[0][case]["state_before"], "the case must exercise a memory"
    assert amp[0][case]["final"].tobytes() == amp[1][case]["final"].tobytes()


# ------------------------------------------------------------ GRACE's names
def _names_script(rank, world_size):
    import grace_names_script
    return grace_names_script.main(rank, world_size)


def test_a_script_using_graces_names_runs_unchanged():
    facts = distributed.run(_names_script, 2, timeout=300, pg_timeout=60)
    for rank_facts in facts:
        assert rank_facts["qsgd_cuda"] == ("QSGDCompressor_CUDA", True)
        for run in ("qsgd_cuda_run", "natural_cuda_run", "helper_topk_run", "powersgd_run"):
            flat, losses, accuracy = rank_facts[run]
            assert losses[-1] < 0.5 * losses[0], (run, losses)
            assert accuracy >= 0.9, run
        assert rank_facts["powersgd_state"] == (2, ["0.weight", "2.weight"], {"0.weight": "Tensor", "2.weight": "Tensor"})
        assert rank_facts["momentums"] == {"0.weight": ("Tensor", 640), "0.bias": ("Tensor", 32),
                                           "2.weight": ("Tensor", 128), "2.bias": ("Tensor", 4)}
        assert rank_facts["global_step"] == 3 * 4  # one per compress call, as GRACE counts
        assert rank_facts["dgc_state"] == (["0.bias", "0.weight", "2.bias", "2.weight"],
                                           ["0.bias", "0.weight", "2.bias", "2.weight"], "Tensor")
        assert rank_facts["orthogonal"]
        assert "no-such-method" in rank_facts["unknown"] and "qsgd_cuda" in rank_facts["unknown"]
    for run in ("qsgd_cuda_run", "natural_cuda_run", "helper_topk_run", "powersgd_run"):
        assert facts[0][run][0].tobytes() == facts[1][run][0].tobytes(), run


# ------------------------------------------------------------ copies of bound communicators
COPY_CASES = {
    "topk/residual/allgather": {"compressor": "topk", "memory": "residual", "communicator": "allgather"},
    "powersgd/powersgd/allreduce": {"compressor": "powersgd", "memory": "powersgd", "communicator": "allreduce"},
    "dgc clipping/allgather": {"compressor": "dgc", "memory": "dgc", "communicator": "allgather",
                               "gradient_clipping": True},
    "qsgd/none/allgather": {"compressor": "qsgd", "memory": "none", "communicator": "allgather"},
}


def _copies_step_on(rank, world_size):
    """Per case: a communicator bound to the process group by three steps, deep-copied
    and pickled; the original and both copies then take the same gradients in turn (every
    rank in the same order), and each copy's results are compared with the original's."""
    import copy
    import pickle
    from deepreduce import grace_from_params
    from deepreduce.stats import GLOBAL
    out = {}
    for label, params in COPY_CASES.items():
        torch.manual_seed(rank)
        grads = [torch.randn(24, 10) for _ in range(6)]
        original = grace_from_params(dict(params))
        for g in grads[:3]:
            original.step(g, label)
        copies = [copy.deepcopy(original), pickle.loads(pickle.dumps(original))]
        same, recorded = [], []
        for g in grads[3:]:
            want = original.step(g, label).numpy().tobytes()
            same.append([c.step(g, label).numpy().tobytes() == want for c in copies])
        recorded = [c.stats is GLOBAL for c in copies]
        out[label] = (same, recorded)
    return out


def test_a_communicator_bound_to_the_process_group_copies_and_pickles():
    """GRACE's communicators held nothing live, so a script could deep-copy or pickle one
    mid-run; ours hold the transport they bound (torch.distributed's group), which a copy
    binds again at its first step."""
    for rank_out in distributed.run(_copies_step_on, 2, timeout=300, pg_timeout=60):
        for label, (same, recorded) in rank_out.items():
            assert all(all(step) for step in same), (label, same)
            assert recorded == [True, True], label


@pytest.mark.parametrize("params", [
    {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.3},
    {"compressor": "powersgd", "memory": "powersgd", "communicator": "allreduce"},
])
def test_a_compiled_gradient_sync_steps_as_the_eager_one(params):
    """torch.compile of a function that calls grc.step traced into NumPy and CFFI and
    failed ("cannot create weak reference to '_cffi_backend.Lib' object"); the steps are
    now kept out of the graph and run as they do eagerly."""
    import torch
    from deepreduce import grace_from_params
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    model(torch.randn(4, 8)).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    results = []
    for compile_it in (False, True):
        grc = grace_from_params(dict(params, transport="local"))

        def sync():
            for name, p in model.named_parameters():
                p.grad.copy_(grc.step(p.grad, name))
        for p, g in zip(model.parameters(), grads):
            p.grad.copy_(g)
        (torch.compile(sync, backend="eager") if compile_it else sync)()
        results.append([p.grad.clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*results))


def test_entry_points_kept_out_of_torch_compile_keep_their_binding():
    """Only plain functions are wrapped: a subclass's staticmethod step lost its binding
    ('takes 2 positional arguments but 3 were given')."""
    import torch  # noqa: F401 - the wrapping needs torch imported
    from deepreduce.communicators.allgather import Allgather
    from deepreduce.compressors.none import NoneCompressor
    from deepreduce.memories.none import NoneMemory

    class Echo(Allgather):
        step = staticmethod(lambda tensor, name: tensor)

    grc = Echo(NoneCompressor(), NoneMemory(), 1, transport="local")
    assert grc.step(3, "w") == 3
    assert getattr(Allgather.step, "_torchdynamo_disable", False)  # the plain one is kept out
