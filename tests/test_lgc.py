"""LGC (SPEC §7): the three stages on real gloo ranks, both variants, checkpoint resume,
and the bad inputs of the issue. The distributed cases run in one spawn per world size:
each worker loops over the variants and checkpoints and returns what the tests check."""
import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import distributed  # noqa: E402
import deepreduce  # noqa: E402
from deepreduce.compressors import lgc  # noqa: E402

STEPS = 12
STAGE_PARAMS = {"compressor": "lgc", "compress_ratio": 0.01, "lgc_dense_steps": 2, "lgc_train_steps": 4,
                "lgc_innovation_ratio": 1e-3}
# Checkpoints taken after this many steps: in stage 2 and in stage 3.
CHECKPOINTS = {2: 4, 3: 8}
TRACKED = "2.weight"  # a tensor LGC compresses (64x64, k = 40)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def _batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(16, 32, generator=g)
    return x, (x[:, :4].sum(1) > 0).long() + 2 * (x[:, 4] > 0).long()


class Run:
    """Model, optimizer and LGC communicator of one rank; ``save``/``load`` go through
    torch.save bytes, as a real checkpoint would."""

    def __init__(self, params):
        self.params = params
        self.model = _model()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
        self.grc = deepreduce.grace_from_params(dict(params))

    def step(self, rank, step):
        x, y = _batch(rank, step)
        self.opt.zero_grad()
        torch.nn.functional.cross_entropy(self.model(x), y).backward()
        for name, p in self.model.named_parameters():
            p.grad.copy_(self.grc.step(p.grad, name))
        self.opt.step()
        return self.grc.compressor.stage(TRACKED)

    def save(self):
        buf = io.BytesIO()
        torch.save({"model": self.model.state_dict(), "opt": self.opt.state_dict(),
                    "lgc": self.grc.compressor.state_dict()}, buf)
        return buf.getvalue()

    def load(self, blob):
        state = torch.load(io.BytesIO(blob), weights_only=False)
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.grc.compressor.load_state_dict(state["lgc"])

    def flat(self):
        return torch.cat([p.detach().reshape(-1) for p in self.model.parameters()]).numpy().copy()


def _lgc_cases(rank, world_size):
    out = {}
    for variant in ("ps", "rar"):
        params = dict(STAGE_PARAMS, lgc_variant=variant)
        run = Run(params)
        stages, tracked_bytes = [], []
        for s in range(STEPS):
            before = _bytes_sent(TRACKED)
            stages.append(run.step(rank, s))
            tracked_bytes.append(_bytes_sent(TRACKED) - before)
        out[variant] = {"stages": stages, "flat": run.flat(), "tracked_bytes": tracked_bytes}
        for stage, at in CHECKPOINTS.items():
            first = Run(params)
            for s in range(at):
                first.step(rank, s)
            blob = first.save()
            second = Run(params)
            second.load(blob)
            resumed_stage = second.grc.compressor.stage(TRACKED)
            for s in range(at, STEPS):
                second.step(rank, s)
            out[(variant, stage)] = {"resumed_stage": resumed_stage, "flat": second.flat()}
        out[(variant, "nonfinite")] = _nonfinite_case(rank, params)
    return out


def _bytes_sent(name):
    row = deepreduce.stats.GLOBAL.per_name.get(name)
    return row.bytes_sent if row is not None else 0


def _nonfinite_case(rank, params):
    """An overflow (inf/NaN in every gradient of rank 1, as AMP's scaler produces) in
    stage 1, 2 and 3: every rank gets non-finite aggregates and LGC's state is exactly
    as before; training then goes on."""
    run = Run(params)
    verdicts = []
    for s in range(STEPS):
        if s in (1, 3, 9):
            before = _state_bytes(run.grc.compressor)
            nonfinite = []
            for name, p in run.model.named_parameters():
                bad = torch.full_like(p, float("nan") if rank == 1 else 1.0)
                if rank == 1 and p.dim() == 1:
                    bad[0] = float("inf")
                nonfinite.append(not bool(torch.isfinite(run.grc.step(bad, name)).any()))
            verdicts.append((all(nonfinite), before == _state_bytes(run.grc.compressor)))
        run.step(rank, s)
    return verdicts, run.flat()


def _state_bytes(compressor):
    buf = io.BytesIO()
    torch.save(compressor.state_dict(), buf)
    return buf.getvalue()


@pytest.fixture(scope="module", params=[2, 3])
def cases(request):
    return distributed.run(_lgc_cases, request.param, timeout=600, pg_timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["ps", "rar"])
def test_three_stages_identical_parameters_on_every_rank(cases, variant):
    stages = cases[0][variant]["stages"]
    # stage() is the stage of the *next* step: 2 dense steps, 4 top-k steps, then LGC.
    assert stages == [1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3]
    for other in cases[1:]:
        assert other[variant]["flat"].tobytes() == cases[0][variant]["flat"].tobytes()
        assert other[variant]["stages"] == stages
    assert np.isfinite(cases[0][variant]["flat"]).all()


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["ps", "rar"])
def test_stage3_bytes_at_most_half_of_top_k(cases, variant):
    """On the tensor the autoencoder codes, mean bytes per rank per stage-3 step (after the
    first, which also broadcasts the autoencoder) against top-k's at the same ratio."""
    topk = _topk_stage3_bytes([(64, 64)], STAGE_PARAMS["compress_ratio"])
    per_rank = [np.mean(c[variant]["tracked_bytes"][7:]) for c in cases]
    assert np.mean(per_rank) <= 0.5 * topk, (per_rank, topk)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["ps", "rar"])
@pytest.mark.parametrize("stage", sorted(CHECKPOINTS))
def test_resume_from_checkpoint_continues_exactly(cases, variant, stage):
    for per_rank in cases:
        assert per_rank[(variant, stage)]["resumed_stage"] == stage
        # Same stage, same autoencoder, same error feedback: the very same parameters as
        # the run that was never interrupted.
        assert per_rank[(variant, stage)]["flat"].tobytes() == per_rank[variant]["flat"].tobytes()


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["ps", "rar"])
def test_nonfinite_gradient_passes_through_and_changes_no_state(cases, variant):
    for per_rank in cases:
        verdicts, flat = per_rank[(variant, "nonfinite")]
        assert verdicts == [(True, True)] * 3
        assert np.isfinite(flat).all()
        assert flat.tobytes() == cases[0][(variant, "nonfinite")][1].tobytes()


# ------------------------------------------------------------------ one rank, in process
def _local(**overrides):
    params = dict(STAGE_PARAMS, transport="local", lgc_dense_ends=False)
    params.update(overrides)
    return deepreduce.grace_from_params(params)


def test_defaults_top_k_ratio_is_the_papers():
    grc = deepreduce.grace_from_params({"compressor": "lgc", "transport": "local"})
    c = grc.compressor
    assert (c.compress_ratio, c.innovation_ratio, c.variant) == (1e-3, 1e-5, "ps")


@pytest.mark.parametrize("key, value, error", [("lgc_dense_steps", -1, ValueError), ("lgc_dense_steps", 1.5, ValueError),
                                               ("lgc_train_steps", "10", TypeError), ("lgc_train_steps", True, TypeError)])
def test_stage_lengths_must_be_non_negative_integers(key, value, error):
    """A string or a bool is a wrong type (ParameterTypeError, a TypeError), as for every
    other key; a fraction or a negative count a wrong value."""
    with pytest.raises(error, match=key):
        _local(**{key: value})


@pytest.mark.parametrize("overrides, match", [
    ({"memory": "residual"}, "own error feedback"),
    ({"communicator": "allgather"}, "own collectives"),
    ({"lgc_variant": "star"}, "lgc_variant"),
    ({"lgc_index": "bloom"}, "lossless"),
    ({"lgc_dense_steps": 0, "lgc_dense_ends": True}, "lgc_dense_ends"),
    ({"lgc_channels": [16, 0]}, "lgc_channels"),
    ({"compress_ratio": 0.0}, "compress_ratio"),
    # No sample kept, or no Adam step: the autoencoder never learnt, unsaid.
    ({"lgc_buffer": 0}, "lgc_buffer must be an integer in \\[1, "),
    ({"lgc_train_iters": 0}, "lgc_train_iters must be an integer in \\[1, ")])
def test_bad_configurations_are_refused(overrides, match):
    with pytest.raises(ValueError, match=match):
        _local(**overrides)


def test_without_torch_the_error_names_the_extra():
    import subprocess
    import sys
    code = ("import sys; sys.modules['torch'] = None\n"
            "import deepreduce\n"
            "try:\n    deepreduce.grace_from_params({'compressor': 'lgc'})\n"
            "except ImportError as e:\n    print('ImportError', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "ImportError" in out.stdout and "deepreduce[torch]" in out.stdout, out.stdout + out.stderr
    # importing deepreduce itself never imports torch
    code = "import sys, deepreduce; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120).stdout.strip() == "False"


def test_dense_ends_with_one_fused_tensor_is_refused():
    grc = _local(lgc_dense_steps=1, lgc_train_steps=1, lgc_dense_ends=True)
    g = np.linspace(-1, 1, 4096, dtype=np.float32)
    grc.step(g, "fused")  # stage 1: dense
    with pytest.raises(ValueError, match="lgc_dense_ends=False"):
        grc.step(g, "fused")


def test_small_tensor_goes_dense_in_every_stage():
    grc = _local(lgc_dense_steps=1, lgc_train_steps=1)
    g = np.linspace(-1, 1, 20, dtype=np.float32)  # below lgc_min_numel
    for _ in range(4):
        out = grc.step(g, "small")
        assert np.array_equal(out, g)
    assert grc.compressor.stage("small") == lgc.STAGE_LGC
    assert grc.compressor.wire_bytes([], grc.compressor.compress(g, "small")[1]) == g.nbytes


def test_one_rank_runs_the_three_stages_and_error_feedback_keeps_what_was_not_sent():
    grc = _local()
    rng = np.random.default_rng(0)
    c = grc.compressor
    sent = np.zeros(4096, dtype=np.float32)
    total = np.zeros(4096, dtype=np.float32)
    for step in range(12):
        g = rng.standard_normal(4096).astype(np.float32)
        total += g
        out = grc.step(g, "w")
        sent += out
        assert np.isfinite(out).all()
        if c.stage("w") > lgc.STAGE_DENSE and step >= 2:
            assert np.count_nonzero(out) <= c.topk_count(4096)
        # Whatever was not delivered is held back: delivered + residual = everything.
        np.testing.assert_allclose(sent + c.residuals.get("w", 0.0), total, rtol=1e-5, atol=1e-4)
    assert c.stage("w") == lgc.STAGE_LGC and c.synced


@pytest.mark.parametrize("variant", ["ps", "rar"])
def test_a_huge_finite_step_in_stage3_leaves_the_error_feedback_finite(variant):
    """Gradients of about 1e20 overflowed the least-squares gain's float32 sums: the gain
    was NaN, the error feedback NaN for good, and every later step all-NaN."""
    grc = _local(lgc_variant=variant, lgc_dense_steps=1, lgc_train_steps=2)
    rng = np.random.default_rng(0)
    for step in range(6):
        g = rng.standard_normal(4096).astype(np.float32) * (1e20 if step == 3 else 1.0)
        out = grc.step(g, "w")
        assert np.isfinite(out).all() and np.isfinite(grc.compressor.residuals.get("w", 0.0)).all(), step
    assert grc.compressor.stage("w") == lgc.STAGE_LGC and grc.compressor.steps["w"] == 6


def _lagging_tensor_case(rank, world_size, variant):
    """Tensor 'b' one step behind 'a' (one overflow on 'b' alone, on rank 1): when 'a'
    enters stage 3 and the weights go out, 'b' is one step more in stage 2."""
    grc = deepreduce.grace_from_params(dict(STAGE_PARAMS, lgc_variant=variant, lgc_dense_steps=1,
                                            lgc_train_steps=3, lgc_dense_ends=False))
    rng = np.random.default_rng(rank)
    outputs = []
    for step in range(8):
        a, b = (rng.standard_normal(5000).astype(np.float32) for _ in range(2))
        if step == 0 and rank == 1:
            b[0] = np.inf
        outputs.append(np.concatenate([grc.step(a, "a"), grc.step(b, "b")]))
    return np.stack(outputs), grc.compressor.autoencoder.flat_weights()


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["ps", "rar"])
def test_a_lagging_tensor_does_not_train_rank0s_autoencoder_after_the_weights_went_out(variant):
    """Rank 0 trained on the lagging tensor's stage-2 step after the broadcast: its
    autoencoder parted from the others', and so did the aggregates, step after step."""
    (out0, weights0), (out1, weights1) = distributed.run(_lagging_tensor_case, 2, variant)
    assert np.array_equal(weights0, weights1)
    finite = np.isfinite(out0).all(axis=1)
    assert finite[1:].all() and np.array_equal(out0[finite], out1[finite])


def test_corrupt_and_foreign_frames_are_refused():
    from deepreduce.codecs.index import LosslessIndex
    from deepreduce.compressors import _lgc_frames as frames
    from deepreduce.errors import FrameError
    codec = frames.FrameCodec(LosslessIndex("rice"))
    S = np.array([3, 9, 100, 4000], dtype=np.uint32)
    lead = dict(latent=np.ones(4, np.float32), scale=np.ones(1, np.float32))
    order = np.array([2, 0, 3, 1], dtype=np.uint32)
    frame = codec.build(frames.PS_LEAD, 4096, S, order, **lead)
    parsed = codec.open(frame, frames.PS_LEAD, 4096, "test", count=4, latent=4)
    assert parsed.indices.tolist() == S.tolist() and parsed.order.tolist() == order.tolist()
    # Well-sealed frames from someone who knows the format, with an order that is no
    # permutation: refused, the message naming the bad entry.
    S5 = np.array([3, 9, 100, 4000, 4001], dtype=np.uint32)  # 3 bits per entry: room for 7
    for S_, forged, why in ((S, [2, 0, 2, 1], "entry 2 repeats at positions 0 and 2"),
                            (S5, [2, 0, 3, 7, 1], "entry 7 at position 3 is out of range for 5 entries")):
        bad = codec.build(frames.PS_LEAD, 4096, S_, np.array(forged, dtype=np.uint32), **lead)
        with pytest.raises(FrameError, match=why):
            codec.open(bad, frames.PS_LEAD, 4096, "test", count=S_.size, latent=4)
    bad = frame.copy()
    bad[len(bad) // 2] ^= 0x40
    with pytest.raises(FrameError):
        codec.open(bad, frames.PS_LEAD, 4096, "test", count=4, latent=4)
    with pytest.raises(FrameError, match="not an LGC"):
        codec.open(frame, frames.RAR_LEAD, 4096, "test", count=4)
    with pytest.raises(FrameError, match="latent"):
        codec.open(frame, frames.PS_LEAD, 4096, "test", count=4, latent=8)
    with pytest.raises(FrameError, match="entries"):
        codec.open(frame, frames.PS_LEAD, 2048, "test", count=4, latent=4)
    # A leader's NaN or Inf scale or latent, well sealed: accepted, it made every later
    # step NaN on every rank through the error feedback.
    for section, value in (("scale", np.nan), ("scale", np.inf), ("latent", -np.inf)):
        forged = dict(lead, **{section: np.full_like(lead[section], value)})
        bad = codec.build(frames.PS_LEAD, 4096, S, order, **forged)
        with pytest.raises(FrameError, match=f"its {section} section holds an Inf or a NaN"):
            codec.open(bad, frames.PS_LEAD, 4096, "test", count=4, latent=4)


def test_a_state_trained_on_another_world_size_is_refused_at_its_first_step():
    """Its autoencoder has a decoder per worker of the run it was saved in: loaded into a
    run of more ranks it failed with an IndexError inside torch, of fewer it went on."""
    grc = _local()
    for step in range(8):  # past the dense stage: the autoencoder is made
        grc.step(np.random.default_rng(step).standard_normal(4096).astype(np.float32), "w")
    c = grc.compressor
    state = c.state_dict()
    assert state["workers"] == 1
    two = c.autoencoder_module.LGCAutoencoder(c.variant, 2, **c.ae_options)
    state.update(autoencoder=two.state_dict(), workers=2)
    fresh = _local()
    fresh.compressor.load_state_dict(state)
    with pytest.raises(ValueError, match="trained on 2 workers and this run has 1"):
        fresh.step(np.ones(4096, np.float32), "w")


def test_state_dict_refuses_another_variant():
    grc = _local()
    state = grc.compressor.state_dict()
    other = _local(lgc_variant="rar")
    with pytest.raises(ValueError, match="variant"):
        other.compressor.load_state_dict(state)


# ------------------------------------------------------------- the whole path: ResNet-20
def _topk_stage3_bytes(shapes, ratio):
    """What top-k at the same ratio sends per step for these tensors (one rank)."""
    from deepreduce.compressors.topk import TopKCompressor
    topk = TopKCompressor(ratio)
    rng = np.random.default_rng(0)
    total = 0
    for i, shape in enumerate(shapes):
        tensors, ctx = topk.compress(rng.standard_normal(shape).astype(np.float32), f"t{i}")
        total += topk.wire_bytes(tensors, ctx)
    return total


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["ps", "rar"])
def test_resnet20_on_generated_cifar10_through_the_three_stages(tmp_path, variant):
    import json

    from deepreduce.cli import main
    from deepreduce.train.models import build_model
    from test_data_loaders import write_cifar

    write_cifar(tmp_path / "cifar", per_batch=16, test=8)  # 80 images: 5 steps per epoch
    params = {"compressor": "lgc", "lgc_variant": variant, "lgc_dense_steps": 3, "lgc_train_steps": 5}
    out = tmp_path / "out"
    # Every gradient fused into one bucket (as the paper codes the model's gradient as one
    # vector): k = n/1000 = 272 values, enough for the autoencoder to pay.
    assert main(["train", "--dataset", "cifar10", "--data-dir", str(tmp_path / "cifar"), "--workers", "2",
                 "--epochs", "3", "--batch-size", "8", "--no-progress", "--no-baseline", "--out", str(out),
                 "--fusion", str(1 << 24), "--params", json.dumps(dict(params, lgc_dense_ends=False))]) == 0
    run = json.loads((out / "log.json").read_text())["runs"][0]
    assert [c["stage"].split(" (")[0] for c in run["stage_changes"]] == ["stage 1", "stage 2", "stage 3"]
    assert all(np.isfinite(e["test_loss"]) for e in run["epochs"])
    stage3 = [s["bytes_sent"] for s in run["steps"] if s.get("stage", "").startswith("stage 3")]
    assert len(stage3) == 15 - 3 - 5
    # bytes_sent in the log is summed over the 2 workers; the first stage-3 step also carries
    # the autoencoder's weights, broadcast once.
    per_worker = np.mean(stage3[1:]) / 2
    numel = sum(p.numel() for p in build_model("resnet20", {"in_shape": (3, 32, 32), "num_classes": 10}).parameters())
    assert per_worker <= 0.5 * _topk_stage3_bytes([(numel,)], 1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["ps", "rar"])
def test_default_task_fused_stage3_sends_at_most_half_of_top_k(tmp_path, variant):
    """The whole step of `deepreduce train`'s default task, gradients fused into one
    bucket: LGC's stage-3 steps (after the one that carries the weights) against top-k at
    the same ratio, fused the same way, through the command line."""
    import json

    from deepreduce.cli import main

    def stage3_bytes(params, out):
        assert main(["train", "--workers", "2", "--epochs", "2", "--no-progress", "--no-baseline",
                     "--fusion", str(1 << 24), "--out", str(out), "--params", json.dumps(params)]) == 0
        steps = json.loads((out / "log.json").read_text())["runs"][0]["steps"]
        return np.mean([s["bytes_sent"] for s in steps[5 + 20 + 1:]])

    lgc_params = {"compressor": "lgc", "lgc_variant": variant, "compress_ratio": 0.01, "lgc_dense_steps": 5,
                  "lgc_train_steps": 20, "lgc_dense_ends": False}
    topk_params = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.01}
    assert stage3_bytes(lgc_params, tmp_path / "lgc") <= 0.5 * stage3_bytes(topk_params, tmp_path / "topk")
