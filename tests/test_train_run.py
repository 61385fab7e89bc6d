"""End to end: the default job on 2 workers for one epoch, then the same job under mpirun and
torchrun, which must reproduce the spawned run exactly."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

TRAIN = ["-m", "deepreduce", "train", "--epochs", "1", "--no-progress"]
# Fields that must agree across launchers (wall time and codec seconds naturally differ).
SAME = ("metric", "test_loss", "train_loss", "bytes_sent", "dense_bytes")


def run(cmd, env=None, timeout=120, cwd=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def compressed_epochs(out):
    log = json.loads((out / "log.json").read_text())
    run0 = next(r for r in log["runs"] if r["label"] == "compressed")
    return log, [{k: e[k] for k in SAME} for e in run0["epochs"]]


@pytest.fixture(scope="module")
def spawned(tmp_path_factory):
    out = tmp_path_factory.mktemp("spawn")
    stdout = run([sys.executable, *TRAIN, "--workers", "2", "--out", str(out)])
    return out, stdout


def test_default_run_writes_logs_plot_and_table(spawned):
    out, stdout = spawned
    assert "compressed" in stdout and "dense" in stdout and "vs dense" in stdout
    log, _ = compressed_epochs(out)
    assert log["world_size"] == 2 and log["config"]["launcher"] == "spawn"
    summary = {row["run"]: row for row in log["summary"]}
    assert summary["dense"]["relative_volume"] == pytest.approx(1.0)
    assert 0 < summary["compressed"]["relative_volume"] < 0.05       # top-1%: values + indices
    with open(out / "epochs.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["run"], r["epoch"]) for r in rows] == [("compressed", "0"), ("compressed", "1"),
                                                     ("dense", "0"), ("dense", "1")]
    dense_epoch = next(r for r in rows if r["run"] == "dense" and r["epoch"] == "1")
    assert int(dense_epoch["bytes_sent"]) == int(dense_epoch["dense_bytes"]) > 0
    with open(out / "steps.csv") as f:
        steps = list(csv.DictReader(f))
    assert len(steps) == 2 * 23               # ceil(719 / 32) steps per epoch, two runs
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_with_progress_bars_ends_without_a_leaked_semaphore(tmp_path):
    """The README's job draws tqdm bars in a worker, which leaves by os._exit: tqdm's
    default multiprocessing lock would stay registered and Python would warn at exit."""
    proc = subprocess.run([sys.executable, "-m", "deepreduce", "train", "--epochs", "1", "--no-baseline",
                           "--workers", "2", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compressed:" in proc.stderr  # the bar was drawn
    assert "leaked semaphore" not in proc.stderr, proc.stderr


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun")
def test_mpirun_reproduces_spawn(spawned, tmp_path):
    pytest.importorskip("mpi4py")
    root = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"} \
        if os.geteuid() == 0 else {}
    run(["mpirun", "-np", "2", "--oversubscribe", sys.executable, *TRAIN, "--no-baseline",
         "--out", str(tmp_path)], env=root)
    log, epochs = compressed_epochs(tmp_path)
    assert log["config"]["launcher"] == "mpirun" and log["world_size"] == 2
    assert epochs == compressed_epochs(spawned[0])[1]


def test_torchrun_reproduces_spawn(spawned, tmp_path):
    """With the default --out, one folder: each rank took a timestamp of its own and made
    it, so a job could leave an empty folder beside the results."""
    run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         *TRAIN, "--no-baseline"], cwd=tmp_path)
    out, = (tmp_path / "runs").iterdir()
    log, epochs = compressed_epochs(out)
    assert log["config"]["launcher"] == "torchrun" and log["world_size"] == 2
    assert epochs == compressed_epochs(spawned[0])[1]


@pytest.mark.parametrize("env, rank", [({}, 0), ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"}, 3),
                                       ({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                                         "MASTER_PORT": "29500"}, 1)])
def test_launched_rank_is_the_launchers(monkeypatch, env, rank):
    from deepreduce.train.launch import TORCHRUN_ENV, launched_rank
    for key in (*TORCHRUN_ENV, "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert launched_rank() == rank


def test_fusion_packs_consecutive_gradients_and_leaves_dense_training_unchanged(tmp_path):
    """--fusion: one grc.step per bucket of consecutive gradients. A dense run sums the
    same numbers either way, so it must end exactly where the per-parameter run ends."""
    import torch

    from deepreduce.train.loop import GradientBuckets
    from deepreduce.train.models import SmallCNN

    model = SmallCNN()
    sizes = {name: p.numel() * 4 for name, p in model.named_parameters()}
    buckets = GradientBuckets(model, 20000)
    groups = [[name for name, _ in group] for _, group, _ in buckets.buckets]
    assert groups == [["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias"], ["fc1.weight"],
                      ["fc1.bias", "fc2.weight", "fc2.bias"]]
    assert all(sum(sizes[n] for n in g) <= 20000 or len(g) == 1 for g in groups)
    assert [name for name, _, _ in buckets.buckets][1] == "fc1.weight"  # a lone tensor keeps its name

    class Doubling:  # a stand-in communicator: the aggregate is twice the gradient
        def step(self, tensor, name):
            return tensor * 2

    for p in model.parameters():
        p.grad = torch.randn_like(p)
    before = [p.grad.clone() for p in model.parameters()]
    buckets.exchange(Doubling())
    assert all(torch.equal(p.grad, 2 * b) for p, b in zip(model.parameters(), before))

    dense = ["--compressor", "none", "--memory", "none", "--communicator", "allreduce", "--no-baseline"]
    run([sys.executable, *TRAIN, *dense, "--out", str(tmp_path / "plain")])
    run([sys.executable, *TRAIN, *dense, "--fusion", str(1 << 20), "--out", str(tmp_path / "fused")])
    plain, fused = (json.loads((tmp_path / d / "log.json").read_text()) for d in ("plain", "fused"))
    assert fused["config"]["fusion"] == 1 << 20
    assert [{k: e[k] for k in SAME} for e in plain["runs"][0]["epochs"]] == \
        [{k: e[k] for k in SAME} for e in fused["runs"][0]["epochs"]]
