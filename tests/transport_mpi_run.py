"""The allgather workload of transport_workload.py under mpirun (MPI transport): a wrong
byte raises and fails the job; then rank 0 prints one JSON line per rank with the message
each rank got when rank 1 moved on to another tensor, those it got from each collective
when rank 1 passed another dtype, and those when rank 1 stated sizes no rank of ours sends."""
import json
import os
import sys

from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
from transport_workload import diverge, exchange, forged_sizes, mismatched_dtypes  # noqa: E402

from deepreduce.transports.mpi import MPITransport  # noqa: E402


def main():
    comm = MPI.COMM_WORLD
    exchange(MPITransport(), lambda: 0)
    message = diverge(MPITransport(), "head.weight")
    dtypes = mismatched_dtypes(MPITransport())
    sizes = forged_sizes(MPITransport())
    rows = comm.gather({"rank": comm.Get_rank(), "diverged": message, "dtypes": dtypes, "sizes": sizes}, root=0)
    if comm.Get_rank() == 0:
        for row in rows:
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
