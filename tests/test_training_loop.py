"""GRACE-style training over real ranks: gloo processes with torch tensors, and mpirun
with NumPy arrays. Ranks must end bit-identical and the loss must fall."""
import json

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


@pytest.mark.slow
@pytest.mark.mpi
def test_mpirun_numpy_topk_residual_allgather():
    rows = distributed.run_mpi("mpi_numpy_loop.py", 2, json.dumps(TOPK))
    assert len(rows) == 2
    for row in rows:
        assert row["transport"] == "mpi"
        assert row["identical"]
        assert row["last"] < 0.2 * row["first"]
