"""SparDL's sparse all-reduce of one flat buffer (SPEC §6), on any transport with
point-to-point messages.

P workers form d teams of Q = P/d consecutive ranks. The buffer is cut into Q blocks of
B = ceil(n/Q); each block's budget is k_b = max(1, floor(ρ·B)).

1. Spar-Reduce-Scatter inside a team, with the non-recursive schedule (any Q): in each
   round a worker sends some blocks to one peer and receives as many from another;
   before a block leaves, its top-k_b is re-selected (in C) and the rest stays behind.
   Received entries are scatter-added. After the last round worker r of a team owns
   block r, summed over its team.
2. Spar-All-Gather across the d teams (Bruck): the owners of block r keep its top-h,
   exchange those lists, merge them (in team order, so every team gets the same bits)
   and keep the top-k_b; h adapts online (``HControl``).
3. Intra-team Bruck all-gather of the final blocks; the result is divided by P.

Global residual collection: outside the final selection a worker keeps its whole
accumulated gradient; on it, what it held back at its last hop for that block (0 where
it sent the entry). So Σ residual + P·result = Σ accumulated gradient.

Every hop is one message: the frames of the blocks it carries, back to back (header,
indices coded by a lossless index codec, float32 values; see deepreduce/spardl.h).
While a hop is in flight, the blocks of later rounds that no longer wait for data are
selected and framed (reduce-scatter), and the final blocks already received are written into
the result (all-gather), so that work overlaps the transfer.
"""
import math

import numpy as np

from .._native import check, check_frame, f32, ffi, lib, u8, u32, zero
from ..errors import CommunicationError
from ..state import Outputs

INDEX_CODECS = {"raw": lib.DR_INDEX_RAW, "ef": lib.DR_INDEX_EF, "rice": lib.DR_INDEX_RICE,
                "varint": lib.DR_INDEX_VARINT}


def round_sizes(q):
    """Blocks per round of the non-recursive reduce-scatter of q workers:
    reverse([1, 2, ..., 2^(R-2)] + [q - 2^(R-1) if > 0]), R = ceil(log2 q)."""
    if q < 2:
        return []
    rounds = math.ceil(math.log2(q))
    sizes = [2 ** i for i in range(rounds - 1)]
    extra = q - 2 ** (rounds - 1)
    if extra > 0:
        sizes.append(extra)
    return sizes[::-1]


def reduce_scatter_rounds(q, r):
    """Worker r's rounds as (dest, source, send_blocks, recv_blocks), in team ranks. The
    gap starts at q - sizes[0] and halves each round; worker r sends blocks r+gap ..
    r+gap+size-1 to r+gap and receives blocks r .. r+size-1 from r-gap (mod q)."""
    sizes = round_sizes(q)
    rounds = []
    gap = q - sizes[0] if sizes else 0
    for size in sizes:
        send = [(r + gap + j) % q for j in range(size)]
        recv = [(r + j) % q for j in range(size)]
        rounds.append(((r + gap) % q, (r - gap) % q, send, recv))
        gap //= 2
    return rounds


def bruck_rounds(size, position):
    """The Bruck all-gather of ``size`` members from ``position``'s view, as
    (dest, source, count): in round s (gap 2^s) send the first ``count`` items held to
    position - gap and append as many from position + gap. Afterwards item j is the
    one of member (position + j) mod size."""
    rounds, gap = [], 1
    while gap < size:
        rounds.append(((position - gap) % size, (position + gap) % size, min(gap, size - gap)))
        gap *= 2
    return rounds


class HControl:
    """SparDL's online choice of h, the entries each team's owner contributes to the
    cross-team all-gather (reference: ZJU-DAILY/SparDL allreducer.py). It starts at
    floor(B·ρ/d) with step (B·ρ − h)/100 truncated toward 0; after each exchange, with c the size
    of the merged list: while c keeps moving toward k_b the step doubles every second
    time, a move the wrong way reverses and halves it, and h never drops below
    floor(k_b/d) (nor 1). Beyond the reference, h never exceeds the block size B: on a
    block with fewer than k_b nonzeros the merged size stays below k_b and the doubling
    step would otherwise grow h without bound."""

    def __init__(self, block, density, teams, k):
        self.ceiling = block
        self.floor = max(1, k // teams)
        self.h = max(self.floor, int(block * density / teams))
        self.step = int((block * density - self.h) / 100)
        self.inertia = False

    def observe(self, merged, k):
        if (merged > k) != (self.step > 0):  # moving toward k
            if self.inertia:
                self.step *= 2
                self.inertia = False
            else:
                self.inertia = True
        else:
            self.step = int(-0.5 * self.step) if abs(self.step) > 1 else -self.step
            self.inertia = False
        self.h = min(max(self.h + self.step, self.floor), self.ceiling)


class BlockCodec:
    """The C kernels of deepreduce/spardl.h with their scratch, grown once and reused."""

    def __init__(self, index_codec):
        self.codec_id = INDEX_CODECS[index_codec]
        self._work = np.empty(0, dtype=np.uint8)
        self._bounds = {}  # (B, k) -> frame bound: rice's takes ~0.3 ms to find

    def __getstate__(self):
        # A checkpoint without the scratch: a copy grows its own at its first encode.
        return dict(self.__dict__, _work=np.empty(0, dtype=np.uint8))

    def bound(self, block, k):
        """The most bytes a frame of at most k entries of a block of ``block`` takes."""
        k = min(k, block)
        bound = self._bounds.get((block, k))
        if bound is None:
            if len(self._bounds) >= 64:  # layouts of a density schedule: a few at a time
                self._bounds.clear()
            bound = self._bounds[(block, k)] = lib.dr_spardl_frame_bound(block, k, self.codec_id)
        return bound

    def encode(self, block, k, tag):
        """Frame the top-k of ``block`` (a float32 view, modified: the sent entries become
        0, leaving what is held back) and return the frame's bytes."""
        k = min(k, block.size)
        need = lib.dr_spardl_workspace_size(block.size, k)
        if self._work.nbytes < need:
            self._work = np.empty(need, dtype=np.uint8)
        out = np.empty(self.bound(block.size, k), dtype=np.uint8)
        written = ffi.new("size_t *")
        check(lib.dr_spardl_select_encode(f32(block), block.size, k, self.codec_id, tag, u8(out),
                                          out.nbytes, written, ffi.from_buffer(self._work)),
              "SparDL block selection")
        return out[:written[0]]

    @staticmethod
    def split(message, count, what):
        """The ``count`` frames of a received message, as views."""
        frames, offset = [], 0
        length = ffi.new("size_t *")
        for _ in range(count):
            check_frame(lib.dr_spardl_frame_length(u8(message) + offset, message.nbytes - offset, length), what)
            frames.append(message[offset:offset + length[0]])
            offset += length[0]
        if offset != message.nbytes:
            raise CommunicationError(f"{what}: {message.nbytes - offset} bytes after the last of {count} frames")
        return frames

    @staticmethod
    def decode(frame, block, tag, cap, what):
        """(indices, values) of a block frame for a block of ``block`` entries."""
        idx = np.empty(cap, dtype=np.uint32)
        val = np.empty(cap, dtype=np.float32)
        count = ffi.new("size_t *")
        check_frame(lib.dr_spardl_decode(u8(frame), frame.nbytes, block, tag, u32(idx), f32(val), cap, count), what)
        return idx[:count[0]], val[:count[0]]


def merge_in_order(lists):
    """Merge ascending (indices, values) lists, adding values in list order."""
    idx, val = lists[0]
    for other_idx, other_val in lists[1:]:
        out_idx = np.empty(idx.size + other_idx.size, dtype=np.uint32)
        out_val = np.empty(idx.size + other_idx.size, dtype=np.float32)
        n = ffi.new("size_t *")
        check(lib.dr_sparse_merge_add(u32(idx), f32(val), idx.size, u32(other_idx), f32(other_val),
                                      other_idx.size, u32(out_idx), f32(out_val), n), "SparDL merge")
        idx, val = out_idx[:n[0]], out_val[:n[0]]
    return idx, val


def keep_topk(idx, val, k):
    """The k entries of largest |value| of a list, order kept."""
    idx, val = idx.copy(), val.copy()
    work = np.empty(max(k, 1), dtype=np.uint32)
    n = ffi.new("size_t *")
    check(lib.dr_sparse_keep_topk(u32(idx), f32(val), idx.size, k, n, u32(work)), "SparDL re-selection")
    return idx[:n[0]], val[:n[0]]


class Traffic:
    """Bytes and messages this rank sent in one exchange."""

    def __init__(self):
        self.bytes_sent = 0
        self.messages = 0

    def count(self, message):
        self.bytes_sent += message.nbytes
        self.messages += 1


class SparseAllreduce:
    """One SparDL exchange of a flat buffer per call, for a fixed transport, team count,
    density and index codec. ``h`` state is kept per (buffer name, block size, k_b): it
    adapts to that buffer's traffic."""

    def __init__(self, transport, teams, density, index_codec="rice", adapted=None):
        if transport.size % teams:
            raise ValueError(f"spardl_teams={teams} does not divide the world size {transport.size}; "
                             f"pick d among the divisors of {transport.size}")
        self.transport = transport
        self.teams = teams
        self.density = density
        self.codec = BlockCodec(index_codec)
        self.team_size = transport.size // teams
        self.team = transport.rank // self.team_size
        self.position = transport.rank % self.team_size
        self._h = dict(adapted or {})  # what another engine had learnt (``adapted``)
        self.traffic = Traffic()
        # An exchange's dense buffers, reused once nothing refers to them (fresh ones of
        # 40 MB cost the kernel as much time as all the exchange's selections): the
        # accumulated gradient that becomes the residual, per buffer name (the residual
        # of a name's last exchange holds one, the next takes the other), trimmed so that
        # spares of buffer names gone (a step over another set of tensors) do not stay;
        # the working copy the hops select from and add into, and the result, one each
        # (grown to the largest buffer).
        # (A pickled or copied Outputs comes back empty: a copy takes its own buffers.)
        self._accumulated = Outputs()
        self._buffers = Outputs(grow=True)

    @property
    def adapted(self):
        """The h learnt per buffer, to carry into an engine made for another transport."""
        return self._h

    def layout(self, n):
        """(B, k_b) for a buffer of n entries."""
        block = -(-n // self.team_size)
        return block, max(1, int(block * self.density))

    def accumulator(self, name, n, kept):
        """A float32 buffer of n entries for the caller to write the accumulated gradient
        of buffer ``name`` into and hand to ``__call__``: the pool's, once nothing holds
        it (the residual views of the last exchange but one are gone by then). ``kept``:
        whether the caller keeps the residual it becomes; if not, it is scratch, one for
        every name."""
        return self._accumulated.take(name, n) if kept else self._buffers.take("accumulated", n)

    def __call__(self, accumulated, name):
        """Return (result, residual) for this rank's accumulated gradient (float32, n):
        ``result`` the same on every rank, ``residual`` this rank's global residual, made
        in place of ``accumulated``."""
        q, n = self.team_size, accumulated.size
        block, k = self.layout(n)
        self.traffic = Traffic()
        partial = self._buffers.take("partial", q * block)
        partial[:n] = accumulated
        partial[n:] = 0.0
        blocks = partial.reshape(q, block)
        self._reduce_scatter(blocks, k, name)
        final = self._owner_selection(blocks[self.position], k, name)
        result = zero(self._buffers.take("result", n))
        scale = np.float32(self.transport.size)

        def deliver(b, frame):
            """Block b's final entries into the result (/P) and the residual (what this
            rank held back there)."""
            idx, val = self.codec.decode(frame, block, b, k, f"SparDL final block {b} of {name!r}")
            # entries of the block that fall in the padding past n are never sent (zeros)
            base, end = min(b * block, n), min((b + 1) * block, n)
            check(lib.dr_scatter(u32(idx), f32(val / scale), idx.size, f32(result[base:end]), end - base),
                  "SparDL result")
            held = np.empty(idx.size, dtype=np.float32)
            check(lib.dr_gather(f32(blocks[b]), block, u32(idx), idx.size, f32(held)), "SparDL residual")
            check(lib.dr_scatter(u32(idx), f32(held), idx.size, f32(accumulated[base:end]), end - base),
                  "SparDL residual")

        self._team_allgather(final, block, k, name, deliver)
        self._accumulated.trim()
        return result, accumulated

    # -- the three phases ----------------------------------------------------------------
    def _global(self, team_position, team=None):
        return (self.team if team is None else team) * self.team_size + team_position

    def _hop(self, frames, dest, source, name, capacity=None):
        """Send ``frames`` as one message to ``dest`` and start receiving ``source``'s (of
        at most ``capacity`` bytes where every rank knows that bound)."""
        message = np.concatenate(frames) if frames else np.empty(0, dtype=np.uint8)
        self.traffic.count(message)
        return self.transport.start_sendrecv(message, dest, source, name, capacity)

    def _frames_bound(self, count, block, k):
        """The most bytes ``count`` frames of at most k entries of a block of ``block``
        can take."""
        return count * self.codec.bound(block, k)

    def _reduce_scatter(self, blocks, k, name):
        rounds = reduce_scatter_rounds(self.team_size, self.position)
        last_receipt = {}
        for i, (_, _, _, recv) in enumerate(rounds):
            for b in recv:
                last_receipt[b] = i
        framed = {}

        def frame_ready(done_rounds):
            """Frame every later block whose data is complete after ``done_rounds``."""
            for _, _, send, _ in rounds:
                for b in send:
                    if b not in framed and last_receipt.get(b, -1) < done_rounds:
                        framed[b] = self.codec.encode(blocks[b], k, b)

        frame_ready(0)
        for i, (dest, source, send, recv) in enumerate(rounds):
            pending = self._hop([framed[b] for b in send], self._global(dest), self._global(source), name,
                                self._frames_bound(len(recv), blocks.shape[1], k))
            frame_ready(i)  # overlaps the transfer: blocks whose last data came before round i
            what = f"SparDL reduce-scatter round {i} of {name!r}"
            for b, frame in zip(recv, BlockCodec.split(pending.wait(), len(recv), what)):
                idx, val = self.codec.decode(frame, blocks.shape[1], b, k, what)
                check(lib.dr_scatter_add(u32(idx), f32(val), idx.size, f32(blocks[b]), blocks.shape[1]), what)
            frame_ready(i + 1)

    def _owner_selection(self, own, k, name):
        """The frame of this rank's final block: its top-k_b (one team), or the top-k_b of
        the teams' top-h lists merged (several)."""
        if self.teams == 1:
            return self.codec.encode(own, k, self.position)
        key = (name, own.size, k)
        control = self._h.get(key)
        if control is None:
            control = self._h[key] = HControl(own.size, self.density, self.teams, k)
        collected = [self.codec.encode(own, control.h, self.team)]
        what = f"SparDL cross-team all-gather of {name!r}"
        for dest, source, count in bruck_rounds(self.teams, self.team):
            pending = self._hop(collected[:count], self._global(self.position, dest),
                                self._global(self.position, source), name)
            collected += BlockCodec.split(pending.wait(), count, what)
        by_team = [None] * self.teams
        cap = max(control.h, k)
        for j, frame in enumerate(collected):
            team = (self.team + j) % self.teams
            by_team[team] = self.codec.decode(frame, own.size, team, cap, what)
        idx, val = merge_in_order(by_team)
        control.observe(idx.size, k)
        idx, val = keep_topk(idx, val, k)
        staged = np.zeros(own.size, dtype=np.float32)
        check(lib.dr_scatter(u32(idx), f32(val), idx.size, f32(staged), own.size), what)
        return self.codec.encode(staged, idx.size, self.position)

    def _team_allgather(self, final, block, k, name, deliver):
        """Bruck all-gather of the final frames (of at most k entries of a block of
        ``block``) inside the team; ``deliver(block, frame)`` runs on each frame, those of
        one hop while the next hop is in flight."""
        collected = [final]
        arrived = [(self.position, final)]
        what = f"SparDL intra-team all-gather of {name!r}"
        for dest, source, count in bruck_rounds(self.team_size, self.position):
            pending = self._hop(collected[:count], self._global(dest), self._global(source), name,
                                self._frames_bound(count, block, k))
            for b, frame in arrived:  # overlaps the hop
                deliver(b, frame)
            received = BlockCodec.split(pending.wait(), count, what)
            arrived = [((self.position + len(collected) + j) % self.team_size, frame)
                       for j, frame in enumerate(received)]
            collected += received
        for b, frame in arrived:
            deliver(b, frame)
