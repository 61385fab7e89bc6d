"""A GRACE-style loop under mpirun with NumPy arrays only (no torch): least-squares
regression by SGD, each rank on its own shard, gradients exchanged with grc.step over
MPI. Rank 0 prints one JSON line per rank: its parameter checksum and its loss curve."""
import json
import sys

import numpy as np
from mpi4py import MPI

from deepreduce import grace_from_params


def main(params):
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(0)
    true_w = rng.standard_normal(64).astype(np.float32)
    X = rng.standard_normal((1024, 64)).astype(np.float32)
    y = X @ true_w
    w = np.zeros(64, dtype=np.float32)
    grc = grace_from_params(params)
    assert grc.world_size == size
    losses = []
    for step in range(60):
        rows = np.arange(rank, X.shape[0], size)[(step * 16) % 256:][:16]
        grad = (2.0 / rows.size) * X[rows].T @ (X[rows] @ w - y[rows])
        w -= 0.05 * grc.step(grad.astype(np.float32), "w")
        losses.append(float(np.mean((X @ w - y) ** 2)))
    everyone = comm.allgather(w.tobytes())
    identical = all(b == everyone[0] for b in everyone)
    row = {"rank": rank, "identical": identical, "first": losses[0], "last": losses[-1],
           "transport": grc.transport.kind}
    rows = comm.gather(row, root=0)
    if rank == 0:  # one writer, so lines never interleave
        for r in rows:
            print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
