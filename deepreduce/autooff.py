"""``auto_off``: send a tensor dense when compressing it does not pay.

Compression pays when the transfer time it saves exceeds its encode + decode time. On a
fast link and a small tensor it often does not: then the tensor goes dense through an
allreduce. Per tensor name the switch:

0. sends a tensor of fewer than ``min_numel`` elements (``auto_off_min_numel``, 4096: 16 kB)
   dense without measuring: its transfer is latency-bound either way, so compressing it
   cannot pay, and its timings are too short to tell the paths apart;
1. runs ``warmup`` compressed steps, measuring the whole compressed exchange (codec time
   plus transfer) and the bytes it sent;
2. runs as many dense steps, measuring the allreduce (both paths get the same number of
   samples, so neither is favoured by the noise of the other's), unless a link bandwidth
   is configured (``params['bandwidth']``, bytes per second), in which case the dense and
   compressed transfer times are modelled from it: ring allreduce 2(P−1)/P·bytes,
   allgather (P−1)·bytes;
3. decides, then re-measures every ``interval`` steps, since gradients and load change.

Timings on a shared machine are noisy, and a wrong "compress" costs a codec and a
two-collective allgather on every step until the next decision. So each path's cost is the
fastest of its samples in the cycle (interference only ever adds time), and compression is
chosen only when it is clearly cheaper: by more than ``margin`` (10%).

Every rank must take the same path for a tensor (the collectives differ), so the two
costs are averaged across ranks with one tiny allreduce before each decision.
"""
import numpy as np

from .checks import number


class _TensorCost:
    __slots__ = ("steps", "compressed_seconds", "codec_seconds", "wire_bytes", "dense_seconds", "dense",
                 "decided_cycle")

    def __init__(self):
        self.steps = 0
        self.decided_cycle = -1
        self.compressed_seconds = None
        self.codec_seconds = None
        self.wire_bytes = 0
        self.dense_seconds = None
        self.dense = False


class AutoOff:
    def __init__(self, bandwidth=None, warmup=2, interval=100, margin=0.1, min_numel=4096):
        if bandwidth is not None:  # bytes per second
            bandwidth = number(bandwidth, "bandwidth", 0, low_open=True)
        if warmup < 1 or interval <= 2 * warmup:
            raise ValueError("auto_off needs auto_off_warmup >= 1 and auto_off_interval > 2 * auto_off_warmup "
                             f"(each cycle samples both paths), got warmup {warmup!r}, interval {interval!r}")
        if min_numel < 0:
            raise ValueError(f"auto_off_min_numel must be >= 0, got {min_numel!r}")
        self.bandwidth = bandwidth
        self.warmup = warmup
        self.interval = interval
        self.margin = margin
        self.min_numel = min_numel
        self.costs = {}

    @classmethod
    def from_params(cls, params):
        if not params.get("auto_off"):
            return None
        return cls(params.get("bandwidth"), params.get("auto_off_warmup", 2), params.get("auto_off_interval", 100),
                   min_numel=params.get("auto_off_min_numel", 4096))

    def _phase(self, cost):
        """Where in the measure/decide cycle this tensor's next step falls."""
        position = cost.steps % self.interval
        if position < self.warmup:
            return "measure-compressed"
        if position < 2 * self.warmup and self.bandwidth is None:
            return "measure-dense"
        return "decided"

    def wants_dense(self, name, transport, numel):
        """Whether this step of ``name`` goes dense. Call once per step, on every rank."""
        if numel < self.min_numel:  # decided by size: the same on every rank
            return True
        cost = self.costs.setdefault(name, _TensorCost())
        if cost.steps % self.interval == 0:  # a new cycle samples afresh
            cost.compressed_seconds = cost.codec_seconds = cost.dense_seconds = None
        phase = self._phase(cost)
        cycle = cost.steps // self.interval
        cost.steps += 1
        if phase == "measure-compressed":
            return False
        if phase == "measure-dense":
            return True
        if cost.decided_cycle != cycle:  # first decided step of this cycle
            cost.dense = self._decide(cost, transport, name, numel)
            cost.decided_cycle = cycle
        return cost.dense

    def _decide(self, cost, transport, name, numel):
        size = transport.size
        if self.bandwidth is None:
            compressed, dense = cost.compressed_seconds, cost.dense_seconds
        else:
            dense_bytes = 4 * numel
            compressed = cost.codec_seconds + (size - 1) * cost.wire_bytes / self.bandwidth
            dense = 2 * (size - 1) / size * dense_bytes / self.bandwidth
        agreed = transport.allreduce(np.array([compressed, dense], dtype=np.float64), f"{name}/auto_off")
        return not agreed[0] < (1.0 - self.margin) * agreed[1]

    def observe_compressed(self, name, seconds, codec_seconds, wire_bytes):
        cost = self.costs[name]
        cost.compressed_seconds = seconds if cost.compressed_seconds is None else min(cost.compressed_seconds, seconds)
        cost.codec_seconds = codec_seconds if cost.codec_seconds is None else min(cost.codec_seconds, codec_seconds)
        cost.wire_bytes = wire_bytes

    def observe_dense(self, name, seconds):
        cost = self.costs.get(name)
        if cost is None:  # a tensor decided by size: nothing to measure
            return
        cost.dense_seconds = seconds if cost.dense_seconds is None else min(cost.dense_seconds, seconds)
