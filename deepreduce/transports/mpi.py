"""MPI as the engine, through mpi4py. Errors are made to return (not abort) so they
surface as CommunicationError; MPI itself has no timeout, so a peer that hangs without
dying hangs the collective (use torch.distributed's gloo when timeouts matter). An
exception that ends a rank's script aborts the job (``abort_on_uncaught``)."""
import sys

import numpy as np

from .base import END_MARK, Transport, awaiting_mark, longer_than, marked, unmarked


def import_mpi():
    """mpi4py's MPI module (importing it initialises MPI), or an ImportError that says
    how to install mpi4py."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError("the MPI transport needs mpi4py: pip install 'deepreduce[mpi]'") from exc
    return MPI


def abort_on_uncaught(MPI):
    """Make an exception that ends this rank's script (after its traceback is printed)
    abort the whole MPI job, as ``python -m mpi4py`` does. Without it a rank that raised
    (a damaged frame only it received, settings only it had wrong) waited in
    MPI_Finalize while the others waited for it in a collective: the job hung for ever.
    Set once per process, over whatever hook was there."""
    previous = sys.excepthook
    if getattr(previous, "aborts_mpi", False):
        return

    def report_and_abort(kind, value, traceback):
        previous(kind, value, traceback)
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
    report_and_abort.aborts_mpi = True
    sys.excepthook = report_and_abort


class MPITransport(Transport):
    kind = "mpi"

    def __init__(self, comm=None):
        MPI = import_mpi()
        self._MPI = MPI
        self._comm = comm if comm is not None else MPI.COMM_WORLD
        self._comm.Set_errhandler(MPI.ERRORS_RETURN)
        super().__init__(rank=self._comm.Get_rank(), size=self._comm.Get_size())
        if self.size > 1:
            abort_on_uncaught(MPI)

    def _allgather_fixed(self, array):
        out = np.empty((self.size, array.size), dtype=array.dtype)
        self._comm.Allgather(array, out)
        return out

    def _allgatherv_bytes(self, data, sizes):
        displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        out = np.empty(int(sum(sizes)), dtype=np.uint8)
        self._comm.Allgatherv(data, [out, sizes, displs.tolist(), self._MPI.BYTE])
        return [out[d:d + s] for d, s in zip(displs, sizes)]

    def _broadcast_bytes(self, data, nbytes, root):
        buf = marked(data[:nbytes]) if self.rank == root else awaiting_mark(nbytes)
        self._comm.Bcast([buf, self._MPI.BYTE], root=root)
        return unmarked(buf, root)

    def _alltoallv_bytes(self, sends, recv_sizes):
        # Each message marked at its end (base.END_MARK), as on gloo; the empty ones not.
        # The marks go into the one send buffer as it is joined: no copy of each message first.
        send_sizes = [s.nbytes + END_MARK.size if s.nbytes else 0 for s in sends]
        recv_sizes = [size + END_MARK.size if size else 0 for size in recv_sizes]
        send_displs = np.concatenate([[0], np.cumsum(send_sizes)[:-1]]).astype(np.int64).tolist()
        recv_displs = np.concatenate([[0], np.cumsum(recv_sizes)[:-1]]).astype(np.int64).tolist()
        parts = [part for s in sends for part in ((s, END_MARK) if s.nbytes else ())]
        sendbuf = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint8)
        recvbuf = np.empty(int(sum(recv_sizes)), dtype=np.uint8)
        for d, size in zip(recv_displs, recv_sizes):
            if size:
                recvbuf[d + size - END_MARK.size:d + size] = 0
        self._comm.Alltoallv([sendbuf, send_sizes, send_displs, self._MPI.BYTE],
                             [recvbuf, recv_sizes, recv_displs, self._MPI.BYTE])
        return [unmarked(recvbuf[d:d + size], peer) if size else recvbuf[d:d]
                for peer, (d, size) in enumerate(zip(recv_displs, recv_sizes))]

    def _start_sendrecv_bytes(self, data, dest, source, capacity):
        return _MPISendRecv(self, data, dest, source, capacity)

    def _allreduce_sum_inplace(self, array):
        if array.dtype == np.float16:
            # MPI has no half-precision sum: gather everyone's halves and add in float32.
            parts = self._allgatherv_bytes(array.view(np.uint8), [array.nbytes] * self.size)
            total = np.sum([p.view(np.float16).astype(np.float32) for p in parts], axis=0)
            array[...] = total.astype(np.float16)
        else:
            self._comm.Allreduce(self._MPI.IN_PLACE, array, op=self._MPI.SUM)
        return array


class _MPISendRecv:
    """One hop on MPI: a non-blocking send; the receiver probes for the length and then
    receives exactly that many bytes (after checking them against the capacity)."""

    TAG = 7302

    def __init__(self, transport, data, dest, source, capacity):
        self._t = transport
        self._source = source
        self._capacity = capacity
        self._data = data  # kept alive until the send completes
        self._send = transport._comm.Isend([data, transport._MPI.BYTE], dest=dest, tag=self.TAG)

    def wait(self):
        MPI, comm = self._t._MPI, self._t._comm
        status = MPI.Status()
        comm.Probe(source=self._source, tag=self.TAG, status=status)
        nbytes = status.Get_count(MPI.BYTE)
        if self._capacity is not None and nbytes > self._capacity:
            raise longer_than(nbytes, self._capacity, self._source)
        received = np.empty(nbytes, dtype=np.uint8)
        comm.Recv([received, MPI.BYTE], source=self._source, tag=self.TAG)
        self._send.Wait()
        return received
