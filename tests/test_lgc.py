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
        stages = [run.step(rank, s) for s in range(STEPS)]
        out[variant] = {"stages": stages, "flat": run.flat(), "bytes": run.grc.compressor.timings.seconds}
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
