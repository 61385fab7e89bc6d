"""GRACE's three Horovod examples, as written for deepreduce (examples/), on 2 processes
with top-k + residual + allgather and with qsgd, on synthetic MNIST-shaped data in the
real IDX format: the ranks must end with identical weights (each prints a digest).
The TensorFlow ones run under mpirun (MPI transport), the PyTorch one with torchrun's
environment (gloo). Small runs: a few steps each."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from deepreduce.idx import write_synthetic_mnist
from tests.distributed import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {
    "topk": None,  # the example's own GRACE line: Allgather(TopKCompressor(0.3), ResidualMemory())
    "qsgd": {"compressor": "qsgd", "memory": "none", "communicator": "allgather"},
}
TOPK_PARAMS = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.3}
# Non-greedy: mpirun merges the ranks' stdout, and one rank's line can arrive before the
# other's newline ("... sha256 <hex>rank 0: ..."), so two digests may share a line.
LINE = re.compile(r"rank (\d+): (.*?)weights sha256 ([0-9a-f]{64})")


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    return write_synthetic_mnist(str(tmp_path_factory.mktemp("mnist")), train=256, test=64)


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT,
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def _digests(output):
    found = {int(m.group(1)): (m.group(2), m.group(3)) for m in LINE.finditer(output)}
    assert sorted(found) == [0, 1], output[-3000:]
    return found


def _mpirun(script, args, cwd):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")
    done = subprocess.run([mpirun, "--oversubscribe", "-np", "2", sys.executable, os.path.join(ROOT, script), *args],
                          capture_output=True, text=True, timeout=500, env=_env(), cwd=cwd)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout


def _torchrun_env(script, args, cwd):
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env=dict(_env(), RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2",
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
             for r in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-5000:]
    return "".join(outputs)


def _params_args(config):
    return [] if CONFIGS[config] is None else ["--params", json.dumps(CONFIGS[config])]


# script, its length flags, and a file its rank 0 checkpoints to
TF_EXAMPLES = {
    "keras": ("examples/tensorflow/tensorflow2_keras_mnist.py", ["--epochs", "2", "--steps", "8"], "checkpoint-2.keras"),
    "gradient_tape": ("examples/tensorflow/tensorflow2_mnist.py", ["--steps", "24"], "ckpt-1.index"),
}


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("example", sorted(TF_EXAMPLES))
def test_tensorflow_mnist_example(example, config, mnist, tmp_path):
    pytest.importorskip("tensorflow")
    script, length, checkpoint = TF_EXAMPLES[example]
    out = _mpirun(script, ["--data-dir", mnist, *length, "--batch-size", "32", "--checkpoint-dir", str(tmp_path),
                           *_params_args(config)], tmp_path)
    ranks = _digests(out)
    assert ranks[0][1] == ranks[1][1]
    first, last = map(float, re.search(r"loss ([\d.]+) -> ([\d.]+)", ranks[0][0]).groups())
    assert last < first
    assert (tmp_path / checkpoint).exists()


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_pytorch_mnist_example(config, mnist, tmp_path):
    params = CONFIGS[config] or TOPK_PARAMS
    out = _torchrun_env("examples/torch/pytorch_mnist.py",
                        ["--data-dir", mnist, "--epochs", "2", "--batch-size", "32", "--lr", "0.05",
                         "--params", json.dumps(params)],
                        tmp_path)
    ranks = _digests(out)
    assert ranks[0][1] == ranks[1][1]
    accuracy = float(re.search(r"test accuracy ([\d.]+)", ranks[0][0]).group(1))
    assert accuracy > 0.3  # ten classes: chance is 0.1
