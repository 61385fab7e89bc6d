"""What every transport offers the communicators: sum-allreduce, allgather and broadcast
of variable-size payloads, and alltoall, on payloads of either kind (NumPy arrays or
CPU torch tensors; results come back in the kind that went in, see ``edge.like``).

A transport subclass supplies a handful of byte-level primitives; this base class builds
the collectives from them and adds the safety checks that make misuse fail loudly:
payload sizes travel with a tag derived from the tensor name and a code of the payload's
dtype, so ranks that disagree on which tensor they are exchanging, or on its dtype, raise a
CommunicationError naming the tensor and the ranks instead of exchanging garbage (bytes read
as another type's) or hanging on mismatched sizes.

An allgather is one collective in steady state: the header (tag, size, dtype) and the payload
travel together, the payload padded to a capacity that every rank guesses alike from
earlier allgathers (see ``CapacityGuess``); a payload longer than the guess sends its rest
in a second collective. Two collectives (sizes, then payloads) took 2.0-2.7x as long on
gloo as one, each being a round of messages whatever its size.
"""
import contextlib
import numbers
import zlib
from abc import ABC, abstractmethod

import numpy as np

from .. import edge
from ..errors import CommunicationError


def name_tag(name):
    """A 31-bit tag of a tensor name, the same on every rank."""
    return zlib.crc32(str(name).encode("utf-8")) & 0x7FFFFFFF


def dtype_code(dtype):
    """A NumPy dtype as an int64 that is the same on every rank: its ``str`` ('<f4',
    '|u1', '<c16') as little-endian ASCII bytes; ``dtype_name`` reads it back. Kept per
    dtype: an allgather of a step makes one (0.6 us to compute, 0.05 to look up)."""
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        code = _DTYPE_CODES[dtype] = int.from_bytes(np.dtype(dtype).str.encode("ascii")[:8], "little")
    return code


_DTYPE_CODES = {}


# What an alltoall's rank sends as its dtype code when its arrays are of several dtypes.
MIXED_DTYPES = -1


def dtype_name(code):
    """The name of the dtype ``dtype_code`` gave ``code``; a code no rank of ours sends
    (another program on the port, damaged bytes) is named as a number."""
    if code == MIXED_DTYPES:
        return "arrays of several dtypes"
    try:
        return np.dtype(int(code).to_bytes(8, "little").rstrip(b"\0").decode("ascii")).name
    except (OverflowError, UnicodeDecodeError, TypeError, ValueError):
        return f"an unknown dtype (code {int(code):#x})"


# An allgather's block: (tag, payload bytes, dtype code, 0) as little-endian int64, then the
# payload. Four fields keep the payload at a multiple of 16 bytes into the block.
HEADER = np.dtype("<i8")
HEADER_BYTES = 4 * HEADER.itemsize

# The largest payload a rank may state, in bytes (256 TiB: past any machine's memory).
LARGEST_PAYLOAD = 1 << 48

# The last bytes of every message whose size a peer stated beforehand (a broadcast's, an
# alltoall's): gloo accepts a shorter message than the receive posted and leaves the rest
# of the buffer as it was, so a peer that sent fewer bytes than it stated handed an
# unframed payload ('none', fp16, randomk's values) uninitialised memory, and each rank
# other garbage. The receiver zeroes where the mark must land and checks it is there.
END_MARK = np.frombuffer(b"DRendMRK", dtype=np.uint8)


def marked(data):
    """A copy of the uint8 array ``data`` with END_MARK after it: what is sent."""
    out = np.empty(data.nbytes + END_MARK.size, dtype=np.uint8)
    out[:data.nbytes] = data
    out[data.nbytes:] = END_MARK
    return out


def awaiting_mark(nbytes):
    """A receive buffer for a marked message of ``nbytes`` stated bytes, its mark zeroed."""
    out = np.empty(nbytes + END_MARK.size, dtype=np.uint8)
    out[nbytes:] = 0
    return out


def longer_than(nbytes, capacity, peer):
    """The ValueError for rank ``peer``'s message of ``nbytes`` where at most ``capacity``
    can come (``start_sendrecv``)."""
    return ValueError(f"rank {peer} sent {nbytes} bytes where at most {capacity} can come: every rank "
                      "must run the same deepreduce")


def unmarked(buf, peer):
    """The bytes of a received marked message (a view), or a ValueError naming the rank
    ``peer`` where the mark did not arrive where its stated size puts it (the collective's
    ``_guard`` makes it a CommunicationError that names the tensor)."""
    if not np.array_equal(buf[buf.size - END_MARK.size:], END_MARK):
        raise ValueError(f"rank {peer} sent fewer bytes than the {buf.size - END_MARK.size} it stated "
                         "(or other bytes at their end): every rank must run the same deepreduce")
    return buf[:buf.size - END_MARK.size]


class CapacityGuess:
    """How many payload bytes the next allgather should carry with its header.

    Training calls allgather for the same tensors in the same order every step, so the
    guess is the largest payload, at its last allgather, of the tensor that followed the
    previous tensor both of the last two times (where the successor changed, or the
    previous tensor is new, the guess is 0: the sizes go first, in a collective of their
    own, as before). Plus 1/32 and rounded up to 64 bytes, so that codecs whose sizes
    drift from step to step still fit.

    Every input is what an allgather returned, the same bytes on every rank, so every rank
    makes the same guess without exchanging it, even where the ranks have gone on to
    different tensors: the collective stays well-formed (gloo aborts the process on
    blocks of different sizes), and the headers it brings raise the disagreement.
    """

    REMEMBERED = 4096  # tensors; past that the guesses start afresh (names made per step)

    def __init__(self):
        self._previous = None  # tag of the last allgather
        self._follower = {}    # tag -> [tag that came next, times in a row]
        self._largest = {}     # tag -> largest payload of its last allgather

    def capacity(self):
        follower = self._follower.get(self._previous)
        if follower is None or follower[1] < 2:
            return 0
        largest = self._largest[follower[0]]
        return -(-(largest + largest // 32) // 64) * 64

    def record(self, tag, largest):
        """Learn from an allgather's headers: its tag, its largest payload."""
        if len(self._largest) >= self.REMEMBERED and tag not in self._largest:
            self._follower.clear()
            self._largest.clear()
            self._previous = None
        if self._previous is not None:
            follower = self._follower.setdefault(self._previous, [tag, 0])
            follower[1] = follower[1] + 1 if follower[0] == tag else 1
            follower[0] = tag
        self._largest[tag] = largest
        self._previous = tag


class Transport(ABC):
    kind = "abstract"

    def __init__(self, rank, size):
        self.rank = rank
        self.size = size
        self._agreed = set()  # names whose (tag, numel, dtype) every rank has confirmed
        self._capacity = CapacityGuess()

    def __deepcopy__(self, memo):
        # A live connection (a process group, an MPI communicator): the copies of the
        # roles that hold it share it, as they would share torch.distributed itself.
        return self

    # -- primitives a transport implements --------------------------------------------
    @abstractmethod
    def _allgather_fixed(self, array):
        """Gather a 1-D array of the same length and dtype from every rank: returns an
        array (size, len) of that dtype, row r from rank r."""

    @abstractmethod
    def _allgatherv_bytes(self, data, sizes):
        """Gather uint8 arrays of the given per-rank sizes: returns a list of arrays."""

    @abstractmethod
    def _broadcast_bytes(self, data, nbytes, root):
        """Broadcast nbytes from root: returns the uint8 array on every rank."""

    @abstractmethod
    def _alltoallv_bytes(self, sends, recv_sizes):
        """Send sends[j] to rank j, receive recv_sizes[j] bytes from rank j."""

    @abstractmethod
    def _allreduce_sum_inplace(self, array):
        """Sum a numeric array across ranks, in place."""

    @contextlib.contextmanager
    def _guard(self, op, name):
        """Turn a failure of the underlying library into a CommunicationError that names
        the operation, the tensor and this rank."""
        try:
            yield
        except CommunicationError:
            raise
        except Exception as exc:  # the engines raise RuntimeError, MPI.Exception, ...
            raise CommunicationError(
                f"{op} of tensor {name!r} failed on rank {self.rank} of {self.size} "
                f"({self.kind}): {exc}") from exc

    def _allgather_int64(self, values):
        """Gather a small int64 vector from every rank: returns an array (size, len)."""
        return self._allgather_fixed(np.ascontiguousarray(values, dtype=np.int64))

    # -- collectives --------------------------------------------------------------------
    def _check_tags(self, tags, name):
        """Raise unless every rank's tag is this rank's, that of ``name``."""
        for r in range(self.size):
            if tags[r] != tags[self.rank]:
                raise CommunicationError(
                    f"ranks disagree on the tensor sequence: rank {self.rank} sent tensor {name!r} "
                    f"while rank {r} sent a different tensor; every rank must call step() for the "
                    f"same tensors in the same order")

    def _check_dtypes(self, codes, op, name):
        """Raise on every rank alike unless every rank passed the same dtype: the bytes of
        one would be read as another's (garbage), or, in a sum, abort the process in gloo."""
        if np.any(codes != codes[0]):
            sent = ", ".join(f"rank {r}: {dtype_name(c)}" for r, c in enumerate(codes))
            raise CommunicationError(f"{op} of tensor {name!r}: the ranks' dtypes differ ({sent}); "
                                     f"every rank must pass the same dtype")

    def _check_sizes(self, sizes, op, name):
        """Raise on every rank alike unless every byte count the ranks stated (``sizes``: a
        list in rank order, or a row per rank) is one a rank of ours could send: a negative
        one (read as an empty payload) or one past any machine's memory (NumPy's allocation
        error on every rank) comes from a rank that runs other code in this collective, or
        from damage. Plain ints checked by min and max: the allgather's steady path."""
        stated = [int(v) for v in np.ravel(sizes)] if isinstance(sizes, np.ndarray) else sizes
        if min(stated) >= 0 and max(stated) <= LARGEST_PAYLOAD:
            return
        per_rank = len(stated) // self.size
        at = next(i for i, v in enumerate(stated) if not 0 <= v <= LARGEST_PAYLOAD)
        raise CommunicationError(
            f"{op} of tensor {name!r}: rank {at // per_rank} stated a payload of {stated[at]} bytes, "
            f"which no rank of deepreduce sends (0 to {LARGEST_PAYLOAD}); every rank must run the "
            f"same deepreduce in this collective")

    def _agree(self, name, op, code, *values):
        """Exchange (tag(name), dtype ``code``, values) and check every rank is at the same
        tensor, with the same dtype. Returns the per-rank values, a row per rank."""
        rows = self._allgather_int64(np.array([name_tag(name), code, *values], dtype=np.int64))
        self._check_tags(rows[:, 0], name)
        self._check_dtypes(rows[:, 1], op, name)
        return rows[:, 2:]

    def allreduce(self, array, name, agree=False):
        """Sum ``array`` over ranks in place and return it. The first time a name is seen
        its element count and dtype are checked to match on every rank; with ``agree``, at
        every call (a name whose tensors may change size: one small exchange more)."""
        template = array
        array = np.ascontiguousarray(edge.as_numpy(array))
        with self._guard("allreduce", name):
            if agree or name not in self._agreed:
                counts = self._agree(name, "allreduce", dtype_code(array.dtype), array.size)[:, 0]
                if np.any(counts != array.size):
                    raise CommunicationError(
                        f"allreduce of tensor {name!r}: element counts differ across ranks {counts.tolist()}")
                self._agreed.add(name)
            if self.size > 1:
                self._allreduce_sum_inplace(array)
        return edge.like(array, template)

    def allgather(self, array, name):
        """Every rank's ``array`` (any sizes, possibly empty, same dtype), in rank order."""
        template = array
        array = np.ascontiguousarray(edge.as_numpy(array)).reshape(-1)
        data = array.view(np.uint8)
        with self._guard("allgather", name):
            gathered = self._allgather_blocks(data, array.dtype, name)
        return [edge.like(self._as_dtype(g, array.dtype, name), template) for g in gathered]

    def _allgather_blocks(self, data, dtype, name):
        """Every rank's bytes: one collective of blocks (header, then the payload's first
        ``capacity`` bytes, zero-padded), and a second for whatever did not fit."""
        tag = name_tag(name)
        capacity = self._capacity.capacity()
        head = min(capacity, data.nbytes)
        block = np.zeros(HEADER_BYTES + capacity, dtype=np.uint8)
        block[:HEADER_BYTES].view(HEADER)[:] = (tag, data.nbytes, dtype_code(dtype), 0)
        block[HEADER_BYTES:HEADER_BYTES + head] = data[:head]
        blocks = self._allgather_fixed(block)
        headers = np.ascontiguousarray(blocks[:, :HEADER_BYTES]).view(HEADER)
        self._check_tags(headers[:, 0], name)
        self._check_dtypes(headers[:, 2], "allgather", name)
        sizes = [int(s) for s in headers[:, 1]]
        self._check_sizes(sizes, "allgather", name)
        self._capacity.record(tag, max(sizes))
        # Row offsets are multiples of 16 bytes (capacity is of 64), so the views stay aligned.
        gathered = [blocks[r, HEADER_BYTES:HEADER_BYTES + min(s, capacity)] for r, s in enumerate(sizes)]
        if max(sizes) > capacity:
            rests = self._allgatherv_bytes(data[head:], [max(s - capacity, 0) for s in sizes])
            gathered = [np.concatenate([g, rest]) if g.size else rest for g, rest in zip(gathered, rests)]
        return gathered

    def broadcast(self, array, root, name):
        """Root's ``array`` on every rank (non-roots pass an array of the same dtype: checked)."""
        self.check_root(root, name)
        template = array
        array = np.ascontiguousarray(edge.as_numpy(array)).reshape(-1)
        with self._guard("broadcast", name):
            nbytes = array.nbytes if self.rank == root else 0
            sizes = self._agree(name, "broadcast", dtype_code(array.dtype), nbytes)[:, 0]
            self._check_sizes(sizes, "broadcast", name)
            total = int(sizes[root])
            if self.size == 1 or total == 0:
                data = array.view(np.uint8)[:total]
            else:
                data = self._broadcast_bytes(array.view(np.uint8), total, root)
        return edge.like(self._as_dtype(data, array.dtype, name), template)

    def check_root(self, root, name):
        """Refuse a broadcast root that is no rank of this world, on every rank alike: an
        integer in [0, size) (a negative one indexed the ranks' sizes from the end, one
        past the end failed with an IndexError, and at world size 1 it was not looked at)."""
        if isinstance(root, bool) or not isinstance(root, numbers.Integral) or not 0 <= root < self.size:
            raise ValueError(f"broadcast of {name!r}: root {root!r} is not a rank of this world "
                             f"(ranks 0 to {self.size - 1})")

    def alltoall(self, arrays, name):
        """Send arrays[j] to rank j; return what every rank sent to this one, in rank order."""
        if len(arrays) != self.size:
            raise ValueError(f"alltoall of tensor {name!r}: expected {self.size} arrays (one per rank), got {len(arrays)}")
        template = arrays[0]
        arrays = [np.ascontiguousarray(edge.as_numpy(a)).reshape(-1) for a in arrays]
        dtype = arrays[0].dtype
        sends = [a.view(np.uint8) for a in arrays]
        with self._guard("alltoall", name):
            # A rank whose arrays are of several dtypes says so in the exchange, so that every
            # rank raises, not this one alone while the others wait in the collective.
            mixed = any(a.dtype != dtype for a in arrays)
            rows = self._agree(name, "alltoall", MIXED_DTYPES if mixed else dtype_code(dtype), *[s.nbytes for s in sends])
            self._check_sizes(rows, "alltoall", name)
            recv_sizes = [int(rows[j, self.rank]) for j in range(self.size)]
            received = sends if self.size == 1 else self._alltoallv_bytes(sends, recv_sizes)
        return [edge.like(self._as_dtype(r, dtype, name), template) for r in received]

    @staticmethod
    def _as_dtype(data, dtype, name):
        if data.nbytes % np.dtype(dtype).itemsize:
            raise CommunicationError(
                f"tensor {name!r}: received {data.nbytes} bytes, not a whole number of {np.dtype(dtype).name}")
        return data.view(dtype)

    # -- point to point (SparDL's hops) ---------------------------------------------------
    def _start_sendrecv_bytes(self, data, dest, source, capacity):
        """Start sending uint8 ``data`` to rank ``dest`` and receiving a message from rank
        ``source`` (of at most ``capacity`` bytes, None: of any size); return an object
        whose ``wait()`` gives the received bytes once both are done. Transports with
        point-to-point messaging override this."""
        raise NotImplementedError(f"the {self.kind} transport has no point-to-point messages")

    def start_sendrecv(self, data, dest, source, name, capacity=None):
        """Send ``data`` (a uint8 array) to ``dest`` while receiving whatever ``source``
        sends this rank; returns a handle whose ``wait()`` returns the received uint8
        array. Work done between the two calls overlaps the transfer. A rank exchanging
        with itself gets its own bytes back.

        ``capacity``: the most bytes ``source`` can send in this exchange, where the
        caller knows it (every rank of the exchange must then pass one, as the ranks
        sending to it do: the message's form depends on it). The receive is then posted
        at once, for one message instead of its length and then its bytes (gloo); a
        longer message is refused."""
        data = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
        if dest == self.rank and source == self.rank:
            return _Done(data.copy())
        with self._guard("point-to-point exchange", name):
            pending = self._start_sendrecv_bytes(data, dest, source, capacity)
        return _Guarded(self, pending, name)

    def barrier(self):
        self._allgather_int64(np.zeros(1, dtype=np.int64))


class _Done:
    """A finished exchange: ``wait()`` returns what was received."""

    def __init__(self, received):
        self._received = received

    def wait(self):
        return self._received


class _Guarded:
    """A transport's pending exchange whose failures become CommunicationErrors."""

    def __init__(self, transport, pending, name):
        self._transport = transport
        self._pending = pending
        self._name = name

    def wait(self):
        with self._transport._guard("point-to-point exchange", self._name):
            return self._pending.wait()
