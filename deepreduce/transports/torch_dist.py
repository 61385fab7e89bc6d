"""torch.distributed as the engine: gloo on CPU (nccl tensors are moved to the GPU).

Payloads stay NumPy arrays in deepreduce; they cross into torch with ``from_numpy`` (no
copy) for gloo. Variable-size allgather pads to the largest payload, as gloo's
all_gather needs equal sizes; alltoall uses point-to-point send/recv, which gloo has.
Timeouts are the process group's (``init_process_group(timeout=...)``).
"""
import numpy as np

from . import MadeAtFirstUse
from .base import END_MARK, Transport, awaiting_mark, longer_than, marked, unmarked


class TorchTransport(Transport):
    """torch.distributed over ``group`` (None: the default group).

    Pickled, it is the choice 'torch': a process group does not pickle, so a role loaded
    from a pickle binds torch.distributed's default group at its first use, as torch's
    ``PowerSGDState`` takes the default group in place of the one it was given."""
    kind = "torch.distributed"

    def __reduce__(self):
        return str, ("torch",)

    def __init__(self, group=None):
        import torch
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(
                "torch.distributed is not initialised: call torch.distributed.init_process_group("
                "'gloo', ...) before the first step, or pass transport='local' for one process")
        self._torch = torch
        self._dist = dist
        self._group = group
        backend = dist.get_backend(group)
        self._device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else None
        super().__init__(rank=dist.get_rank(group), size=dist.get_world_size(group))

    def _tensor(self, array):
        t = self._torch.from_numpy(array)
        return t.to(self._device) if self._device is not None else t

    def _numpy(self, t):
        return t.cpu().numpy() if self._device is not None else t.numpy()

    def _allgather_fixed(self, array):
        local = self._tensor(array)
        out = [self._torch.empty_like(local) for _ in range(self.size)]
        self._dist.all_gather(out, local, group=self._group)
        return np.stack([self._numpy(t) for t in out])

    def _allgatherv_bytes(self, data, sizes):
        longest = max(sizes)
        padded = np.zeros(longest, dtype=np.uint8)
        padded[:data.nbytes] = data
        local = self._tensor(padded)
        out = [self._torch.empty_like(local) for _ in range(self.size)]
        self._dist.all_gather(out, local, group=self._group)
        return [self._numpy(t)[:s] for t, s in zip(out, sizes)]

    def _broadcast_bytes(self, data, nbytes, root):
        buf = marked(data[:nbytes]) if self.rank == root else awaiting_mark(nbytes)
        t = self._tensor(buf)
        self._dist.broadcast(t, src=self._global_rank(root), group=self._group)
        return unmarked(self._numpy(t), root)

    def _alltoallv_bytes(self, sends, recv_sizes):
        received = [None] * self.size
        requests = []
        for peer in range(self.size):
            if peer == self.rank:
                received[peer] = sends[peer].copy()
                continue
            if sends[peer].nbytes:
                requests.append(self._dist.isend(self._tensor(marked(sends[peer])), self._global_rank(peer),
                                                 group=self._group))
            if recv_sizes[peer]:
                buf = self._tensor(awaiting_mark(recv_sizes[peer]))
                requests.append(self._dist.irecv(buf, self._global_rank(peer), group=self._group))
                received[peer] = buf
            else:
                received[peer] = np.empty(0, dtype=np.uint8)
        for req in requests:
            req.wait()
        return [r if isinstance(r, np.ndarray) else unmarked(self._numpy(r), peer) for peer, r in enumerate(received)]

    def _start_sendrecv_bytes(self, data, dest, source, capacity):
        dest, source = self._global_rank(dest), self._global_rank(source)
        if capacity is None:
            return _TorchSendRecv(self, data, dest, source)
        return _TorchSendRecvBounded(self, data, dest, source, capacity)

    def _allreduce_sum_inplace(self, array):
        t = self._tensor(array)
        self._dist.all_reduce(t, group=self._group)
        if self._device is not None:
            array[...] = t.cpu().numpy()
        return array

    def _global_rank(self, group_rank):
        if self._group is None:
            return group_rank
        return self._dist.get_global_rank(self._group, group_rank)


class GroupOfItsOwn(MadeAtFirstUse):
    """torch.distributed over a process group of its own, with the ranks of ``group``
    (None: every rank), made by the first ``make``. Collectives on one group must reach
    it in one order on every rank; exchanges run from another thread (the DDP hook's
    worker) beside collectives of the program's own on its group (SyncBatchNorm's in the
    backward pass) would not, and would hang. As any ``new_group``, the first ``make``
    must come at the same point of the program on every rank of the group (the other
    ranks take no part: ``use_local_synchronization``).

    Pickled, it is a group of its own over every rank again, as a TorchTransport pickles
    as the default group."""

    def __init__(self, group=None):
        import torch.distributed as dist
        self.group = group
        self.ranks = None if group is None else dist.get_process_group_ranks(group)
        self._made = None

    def __getstate__(self):
        return {"group": None, "ranks": None, "_made": None}

    def make(self):
        if self._made is None:
            import torch.distributed as dist
            ranks = self.ranks if self.ranks is not None else list(range(dist.get_world_size()))
            self._made = TorchTransport(dist.new_group(ranks, timeout=_timeout_of(self.group),
                                                       use_local_synchronization=True))
        return self._made


def _timeout_of(group):
    """The timeout ``group`` (None: the default group) was made with, or None where torch
    does not say: a new group's default is 30 minutes, whatever init_process_group was
    given, and a dead peer would then hang the exchanges that long."""
    import torch
    import torch.distributed as dist
    group = group if group is not None else dist.group.WORLD
    device = torch.device("cuda" if dist.get_backend(group) == "nccl" else "cpu")
    try:
        return group._get_backend(device).options._timeout  # not public: read where present
    except (AttributeError, RuntimeError):
        return None


class _TorchSendRecv:
    """One hop on torch.distributed of a message of any size: the length (int64) then
    the bytes, both sent at once; the receiver learns the length before it posts the
    receive of the bytes (gloo needs a buffer at least as large as what comes). Tags
    keep the two messages apart."""

    LENGTH_TAG, DATA_TAG = 7301, 7302

    def __init__(self, transport, data, dest, source):
        self._t = transport
        self._source = source
        dist, group = transport._dist, transport._group
        self._length = transport._tensor(np.array([data.nbytes], dtype=np.int64))
        self._payload = transport._tensor(data.copy())
        self._sends = [dist.isend(self._length, dest, group=group, tag=self.LENGTH_TAG)]
        if data.nbytes:
            self._sends.append(dist.isend(self._payload, dest, group=group, tag=self.DATA_TAG))
        self._incoming = transport._tensor(np.zeros(1, dtype=np.int64))
        self._length_recv = dist.irecv(self._incoming, source, group=group, tag=self.LENGTH_TAG)

    def wait(self):
        dist, group = self._t._dist, self._t._group
        self._length_recv.wait()
        nbytes = int(self._t._numpy(self._incoming)[0])
        received = self._t._tensor(np.empty(nbytes, dtype=np.uint8))
        if nbytes:
            dist.irecv(received, self._source, group=group, tag=self.DATA_TAG).wait()
        for send in self._sends:
            send.wait()
        return self._t._numpy(received)


class _TorchSendRecvBounded:
    """One hop on torch.distributed whose receiver knows the most bytes that can come:
    one message, [its length (int64)][its bytes][END_MARK], received into a zeroed
    buffer of the longest such message, posted at once (gloo takes a shorter message
    into a longer buffer and leaves the rest). Half the messages of ``_TorchSendRecv``,
    and no wait for a length before the bytes can land. The mark, where the stated
    length puts it in the zeroed buffer, shows the bytes all came."""

    TAG = 7303
    LENGTH = np.dtype(np.int64).itemsize

    def __init__(self, transport, data, dest, source, capacity):
        self._t = transport
        self._source = source
        self._capacity = capacity
        dist, group, head = transport._dist, transport._group, self.LENGTH
        message = np.empty(head + data.nbytes + END_MARK.size, dtype=np.uint8)
        message[:head] = np.array([data.nbytes], dtype=np.int64).view(np.uint8)
        message[head:head + data.nbytes] = data
        message[head + data.nbytes:] = END_MARK
        self._message = transport._tensor(message)  # kept alive until the send completes
        self._send = dist.isend(self._message, dest, group=group, tag=self.TAG)
        self._incoming = transport._tensor(np.zeros(head + capacity + END_MARK.size, dtype=np.uint8))
        self._recv = dist.irecv(self._incoming, source, group=group, tag=self.TAG)

    def wait(self):
        self._recv.wait()
        buf, head = self._t._numpy(self._incoming), self.LENGTH
        nbytes = int(buf[:head].view(np.int64)[0])
        if not 0 <= nbytes <= self._capacity:
            raise longer_than(nbytes, self._capacity, self._source)
        received = unmarked(buf[head:head + nbytes + END_MARK.size], self._source)
        self._send.wait()
        return received
