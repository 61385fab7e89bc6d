"""``auto_off``: send a tensor dense when compressing it does not pay.

Compression pays when the transfer time it saves exceeds its encode + decode time. On a
fast link and a small tensor it often does not: then the tensor goes dense through an
allreduce. Per tensor name the switch:

0. sends a tensor of fewer than ``min_numel`` elements (``auto_off_min_numel``, 4096: 16 kB)
   dense without measuring: its transfer is latency-bound either way, so compressing it
   cannot pay, and its timings are too short to tell the paths apart;
1. samples both paths, ``warmup`` steps each, alternating (compressed first), measuring
   the whole compressed exchange (codec time plus transfer) and the bytes it sent, and the
   dense allreduce. Both paths get the same number of samples, so neither is favoured by
   the noise of the other's. With a link bandwidth configured (``params['bandwidth']``,
   bytes per second) only the compressed path is sampled and the transfers are modelled
   from it: dense as a ring allreduce, 2(P−1)/P·4n bytes; compressed as its communicator
   sends its payload (``link_bytes_per_payload_byte``: allgather and broadcast (P−1)·bytes,
   allreduce and alltoall 2(P−1)/P·bytes; every compressed exchange was charged as an
   allgather, and fp16 over an allreduce went dense on a link where it halves the time);
2. from the second cycle on (the first samples of each path pay one-time costs, fresh
   buffers and a collective's first use, so the first cycle takes all of its samples),
   decides early, after one sample of each path, when one path is clearly cheaper: dense
   when compressing costs at least twice as much (``clear_dense``), compressed when dense
   costs at least four times as much (``clear_compressed``). More samples would not change
   such an answer, and each sample of the losing path costs a step spent on it. The bar
   is higher for compression because a wrong early "compress" is the costly mistake where
   noise can cause it: on a fast link, where a single dense sample stretched by the
   machine's other work could make compression look cheaper (on a slow link dense
   costs tens of times more, far past either bar);
3. decides, then keeps the decision for the rest of the cycle (``interval`` steps). The
   steps of the chosen path are timed too, so a later cycle samples only the other path
   and compares it with the chosen path's most recent steps. A cycle whose decision
   confirms the one before runs twice as long as that one did (up to ``8 * interval``
   steps): a stable answer is re-checked ever more rarely, a changed one after
   ``interval`` steps.

Timings on a shared machine are noisy, and a wrong "compress" costs a codec and a
two-collective allgather on every step until the next decision. So each path's cost is the
fastest of its samples (interference only ever adds time), and compression is chosen only
when it is clearly cheaper: by more than ``margin`` (10%).

Every rank must take the same path for a tensor (the collectives differ), so the costs are
averaged across ranks with one tiny allreduce before each decision (and before an early
one), and everything else the schedule depends on is the same on every rank.
"""
from collections import deque

import numpy as np

from .checks import flag, integer, number

COMPRESSED, DENSE = 0, 1


class _TensorCost:
    """One tensor's place in its measure/decide cycle and its recent timings."""

    __slots__ = ("position", "length", "decided", "dense", "early_checked", "seconds", "codec_seconds",
                 "link_bytes")

    def __init__(self, interval, warmup):
        self.position = 0          # steps taken in this cycle
        self.length = interval     # steps in this cycle
        self.decided = False       # this cycle's decision is made
        self.dense = None          # the last decision (None before the first)
        self.early_checked = False  # this cycle's early look was taken
        # The last `warmup` timings of each path (seconds per step): the chosen path's
        # come from its decided steps, so a new cycle need not sample it again.
        self.seconds = (deque(maxlen=warmup), deque(maxlen=warmup))
        self.codec_seconds = deque(maxlen=warmup)  # encode + decode of the compressed samples
        self.link_bytes = 0        # what the last compressed sample sent over the links

    @property
    def compressed_seconds(self):
        return min(self.seconds[COMPRESSED], default=None)

    @property
    def dense_seconds(self):
        return min(self.seconds[DENSE], default=None)


class AutoOff:
    MAX_STRETCH = 8  # a stable decision's cycle grows up to 8 * interval steps

    def __init__(self, bandwidth=None, warmup=2, interval=100, margin=0.1, min_numel=4096, clear_dense=2.0,
                 clear_compressed=4.0):
        if bandwidth is not None:  # bytes per second
            bandwidth = number(bandwidth, "bandwidth", 0, low_open=True)
        warmup = integer(warmup, "auto_off_warmup", 1, 2**31 - 1)
        interval = integer(interval, "auto_off_interval", 1, 2**31 - 1)
        if interval <= 2 * warmup:
            raise ValueError("auto_off needs auto_off_interval > 2 * auto_off_warmup "
                             f"(each cycle samples both paths), got warmup {warmup!r}, interval {interval!r}")
        min_numel = integer(min_numel, "auto_off_min_numel", 0, 2**63 - 1)
        self.bandwidth = bandwidth
        self.warmup = warmup
        self.interval = interval
        self.margin = margin
        self.min_numel = min_numel
        self.clear_dense = clear_dense
        self.clear_compressed = clear_compressed
        self.costs = {}

    @classmethod
    def from_params(cls, params):
        if not flag(params.get("auto_off", False), "auto_off"):
            return None
        return cls(params.get("bandwidth"), params.get("auto_off_warmup", 2), params.get("auto_off_interval", 100),
                   min_numel=params.get("auto_off_min_numel", 4096))

    def wants_dense(self, name, transport, numel):
        """Whether this step of ``name`` goes dense. Call once per step, on every rank."""
        if numel < self.min_numel:  # decided by size: the same on every rank
            return True
        cost = self.costs.get(name)
        if cost is None:
            cost = self.costs[name] = _TensorCost(self.interval, self.warmup)
        if cost.position == cost.length:
            self._next_cycle(cost)
        cost.position += 1
        if not cost.decided:
            path = self._sample_next(cost, transport, name, numel)
            if path is not None:
                return path == DENSE
        return cost.dense

    def _next_cycle(self, cost):
        """Start a new cycle: forget the samples of the path not taken (they are a cycle
        old); the chosen path's recent steps stand for its samples."""
        cost.position = 0
        cost.decided = False
        cost.early_checked = False
        if cost.dense:
            cost.seconds[COMPRESSED].clear()
            cost.codec_seconds.clear()
        else:
            cost.seconds[DENSE].clear()

    def _sample_next(self, cost, transport, name, numel):
        """The path this step samples, or None once the cycle has decided (now)."""
        compressed, dense = len(cost.seconds[COMPRESSED]), len(cost.seconds[DENSE])
        if self.bandwidth is not None:  # the dense transfer is modelled: sample compression only
            if compressed < self.warmup:
                return COMPRESSED
        else:
            if cost.dense is not None and compressed and dense and not cost.early_checked \
                    and min(compressed, dense) < self.warmup:
                cost.early_checked = True  # one look per cycle (it costs an allreduce)
                if self._decide(cost, transport, name, numel, early=True):
                    return None
            if compressed < self.warmup or dense < self.warmup:
                return COMPRESSED if compressed <= dense else DENSE
        self._decide(cost, transport, name, numel)
        return None

    def _decide(self, cost, transport, name, numel, early=False):
        """Decide from the costs agreed across ranks; returns whether it did (an early
        look decides only when one path is clearly cheaper)."""
        size = transport.size
        if self.bandwidth is None:
            compressed, dense = cost.compressed_seconds, cost.dense_seconds
        else:
            compressed = min(cost.codec_seconds) + cost.link_bytes / self.bandwidth
            dense = 2 * (size - 1) / size * 4 * numel / self.bandwidth
        agreed = transport.allreduce(np.array([compressed, dense], dtype=np.float64), f"{name}/auto_off")
        compressed, dense = float(agreed[0]), float(agreed[1])
        if early:
            if compressed >= self.clear_dense * dense:
                choice = True
            elif dense >= self.clear_compressed * compressed:
                choice = False
            else:
                return False
        else:
            choice = not compressed < (1.0 - self.margin) * dense
        # A decision that confirms the last one earns a longer cycle before the next look.
        stable = cost.dense is not None and choice == cost.dense
        cost.length = min(2 * cost.length, self.MAX_STRETCH * self.interval) if stable else self.interval
        cost.dense = choice
        cost.decided = True
        return True

    def observe_compressed(self, name, seconds, codec_seconds, link_bytes):
        cost = self.costs[name]
        cost.seconds[COMPRESSED].append(seconds)
        cost.codec_seconds.append(codec_seconds)
        cost.link_bytes = link_bytes

    def observe_dense(self, name, seconds):
        cost = self.costs.get(name)
        if cost is None:  # a tensor decided by size: nothing to measure
            return
        cost.seconds[DENSE].append(seconds)
