"""GRACE-style training over real ranks: gloo processes with torch tensors, and mpirun
with NumPy arrays. Ranks must end bit-identical and the loss must fall."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch")

import distributed
import grace_loop

TOPK = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.1}


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [2, 3])
def test_topk_residual_allgather_trains_identically(world_size):
    results = distributed.run(grace_loop.train, world_size, TOPK)
    params0, losses0, _ = results[0]
    for params, _, _ in results[1:]:
        assert params.tobytes() == params0.tobytes()  # bit-identical on every rank
    assert losses0[-1] < 0.6 * losses0[0]


def mpirun():
    exe = shutil.which("mpirun")
    if exe is None:
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")
    pytest.importorskip("mpi4py")
    return [exe, "--oversubscribe", "-np", "2"]


def run_mpi(script, params):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    here = os.path.dirname(__file__)
    result = subprocess.run(mpirun() + [sys.executable, os.path.join(here, script), json.dumps(params)],
                            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow
@pytest.mark.mpi
def test_mpirun_numpy_topk_residual_allgather():
    rows = run_mpi("mpi_numpy_loop.py", TOPK)
    assert len(rows) == 2
    for row in rows:
        assert row["transport"] == "mpi"
        assert row["identical"]
        assert row["last"] < 0.2 * row["first"]
