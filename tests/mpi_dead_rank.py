"""Under mpirun: rank 1 dies at step 5 of a GRACE loop (how: argv[1], 'exit' with
status 3, 'kill' by SIGKILL, or 'raise': an exception its script does not catch, as a
damaged frame only it received would raise) while the other ranks are in, or entering, a
collective. The job must end, not hang; the survivors never finish."""
import os
import signal
import sys

import numpy as np
from mpi4py import MPI

from deepreduce import grace_from_params


def main(how):
    rank = MPI.COMM_WORLD.Get_rank()
    grc = grace_from_params({"compressor": "topk", "memory": "residual", "communicator": "allgather",
                             "compress_ratio": 0.1, "transport": "mpi"})
    for step in range(200):
        if rank == 1 and step == 5:
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if how == "raise":
                raise ValueError("rank 1 gives up")
            os._exit(3)
        grc.step(np.full(1000, step, dtype=np.float32), "w")
    print(f"rank {rank} finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
