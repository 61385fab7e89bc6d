"""SparDL under mpirun: the workload of spardl_workload.py over MPI; rank 0 prints one
JSON line per rank with the digest of its results."""
import json
import os
import sys

from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
from spardl_workload import digest, run_steps  # noqa: E402


def main(teams, density, steps):
    comm = MPI.COMM_WORLD
    record = run_steps(teams, density, steps)
    rows = comm.gather({"rank": comm.Get_rank(), "digest": digest(record)}, root=0)
    if comm.Get_rank() == 0:
        for row in rows:
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]))
