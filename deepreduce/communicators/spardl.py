"""``communicator='spardl'``: SparDL's sparse all-reduce behind GRACE's interface.

SparDL reduces a whole model's gradients as one flat buffer. GRACE scripts hand the
communicator one tensor at a time (``grc.step(grad, name)``), so the tensors of a step
are gathered:

- During the first backward pass the communicator learns the step's tensor names, in call
  order, exchanging each tensor on its own (nothing tells it yet where the step ends).
- From then on ``step`` keeps each tensor and returns *that same tensor object*, which is
  overwritten in place with the averaged result once the step's exchange runs: when the
  last learned name arrives (that call returns with every tensor filled). The usual GRACE
  loop (``grad.copy_(grc.step(grad, name))`` or ``p.grad = grc.step(p.grad, name)``)
  therefore sees every result before ``optimizer.step()``.
- ``grc.flush()`` runs the exchange of whatever is pending now: for loops that skip
  tensors or change their set (after a first flush, names outside the learned set wait
  for the next flush instead of raising), or that want the first pass to count as
  learned. The first name seen again before ``flush`` also ends the learning pass.
- ``grc.exchange(tensor, name)`` runs one exchange of one buffer at once (the DDP hook
  uses it per bucket).

Roles: the compressor must be ``topk`` (its ``compress_ratio`` is SparDL's density ρ;
params ``density`` sets it too). The memory ``residual`` stands for SparDL's global
residual collection, kept per tensor name; ``none`` keeps no residual.

Every exchange starts with one small allgather in which the ranks compare the step's
tensor names, total size, team count and density, and whether any gradient is
non-finite. Disagreement raises CommunicationError on every rank (never a hang); a
non-finite gradient anywhere makes the result NaN on every rank (so AMP's GradScaler
skips the step) and leaves every residual as it was.
"""
import time

import numpy as np

from .. import edge
from .._native import check, f32, lib
from ..autooff import AutoOff
from ..base import Communicator
from ..checks import fraction, integer, name as checked_name
from ..compressors.topk import TopKCompressor
from ..errors import CommunicationError
from ..memories.none import NoneMemory
from ..memories.residual import ResidualMemory
from ..transports import name_tag
from .spardl_core import INDEX_CODECS, SparseAllreduce


class Pending:
    """A tensor handed to ``step`` and waiting for its step's exchange."""

    __slots__ = ("tensor", "flat", "restore")

    def __init__(self, tensor, flat, restore):
        self.tensor = tensor    # the caller's object, filled in place later
        self.flat = flat        # a float32 copy of its values now
        self.restore = restore

    def fill(self, values):
        result = self.restore(values)
        if hasattr(self.tensor, "copy_"):  # a torch tensor (any device and dtype)
            import torch
            # In inference mode for a tensor made there, and outside autograd (a leaf that
            # requires grad): as every other communicator, spardl takes both. (no_grad
            # inside: inference_mode(False) turns gradients on.)
            with torch.inference_mode(self.tensor.is_inference()), torch.no_grad():
                self.tensor.copy_(result)
        else:
            self.tensor[...] = result


def refuse_unwritable(tensor, name):
    """A ValueError naming ``name`` unless the step's result can be written into
    ``tensor`` in place, said at its step, before anything is exchanged: an expanded or
    otherwise overlapping view would take one value for several elements, a read-only
    array none."""
    if hasattr(tensor, "stride"):  # torch: strides in elements
        strides, unit, writeable = tensor.stride(), 1, True
    else:                          # NumPy: strides in bytes
        strides, unit, writeable = tensor.strides, tensor.itemsize, tensor.flags.writeable
    if _elements_share_memory(tensor.shape, strides, unit):
        why = "has elements that share memory (an expanded view)"
    elif not writeable:
        why = "is read-only"
    else:
        return
    raise ValueError(f"tensor {name!r}: spardl writes a step's results into the tensors given to step (it "
                     f"exchanges them together, after the step's last tensor), and this one {why}; pass a "
                     "tensor of its own, e.g. .clone()")


def _elements_share_memory(shape, strides, unit):
    """Whether two elements of a strided view may share memory: taken by increasing
    stride, each dimension must step past all that the ones before it reach."""
    if 0 in tuple(shape):
        return False  # no elements
    reach = unit  # memory the dimensions so far span, from the first element's start
    for stride, size in sorted((abs(st), size) for st, size in zip(strides, shape) if size > 1):
        if stride < reach:
            return True
        reach += stride * (size - 1)
    return False


class SparDL(Communicator):
    """SparDL's sparse all-reduce (see the module docstring and spardl_core)."""

    def __init__(self, compressor, memory, world_size=None, transport=None, stats=None,
                 auto_off=None, teams=1, density=None, index_codec="rice"):
        super().__init__(compressor, memory, world_size, transport=transport, stats=stats)
        if not isinstance(compressor, TopKCompressor):
            raise ValueError(f"communicator 'spardl' selects top-k per block itself: use compressor='topk' "
                             f"(got {type(compressor).__name__})")
        if not isinstance(memory, (ResidualMemory, NoneMemory)):
            raise ValueError("communicator 'spardl' keeps SparDL's global residuals itself: use "
                             f"memory='residual' (or 'none' for no error feedback), got {type(memory).__name__}")
        if auto_off is not None:
            raise ValueError("auto_off does not apply to communicator 'spardl'")
        if density is not None:
            compressor.compress_ratio = density
        fraction(compressor.compress_ratio, "spardl density")
        teams = integer(teams, "spardl_teams", 1, 2 ** 31 - 1)
        if checked_name(index_codec, "spardl_index_codec", sorted(INDEX_CODECS)) not in INDEX_CODECS:
            raise ValueError(f"spardl_index_codec must be one of {sorted(INDEX_CODECS)}, got {index_codec!r}")
        self.teams = teams
        self.index_codec = index_codec
        self._engine = None
        self._learning = []     # names of the first step, in call order, until learned
        self._names = None      # the learned names of a step
        self._pending = {}      # name -> Pending
        self._manual = False    # the caller flushes: names outside the learned set may come
        self.last_traffic = None

    @classmethod
    def from_params(cls, compressor, memory, params):
        return cls(compressor, memory, params["world_size"], transport=params["transport"],
                   auto_off=AutoOff.from_params(params),
                   teams=params.get("spardl_teams", 1), density=params.get("density"),
                   index_codec=params.get("spardl_index_codec", "rice"))

    @property
    def density(self):
        return self.compressor.compress_ratio

    def send_receive(self, tensors, name, ctx):
        raise NotImplementedError("spardl exchanges whole steps: use step(), flush() or exchange()")

    # -- the GRACE loop ------------------------------------------------------------------
    def _step(self, tensor, name):
        if self._names is None and name in self._learning:
            self._names = list(self._learning)  # a name came back: the first step is known
            self._flush_pending()
        if self._names is None:
            self._learning.append(name)
            return self.exchange(tensor, name)
        if name not in self._names and not self._manual:
            raise ValueError(f"tensor {name!r} is not one of the {len(self._names)} tensors spardl learned "
                             "for a step; when the set of tensors changes, call grc.flush() after the "
                             "last tensor of every step")
        if name in self._pending:
            missing = [learned for learned in self._names if learned not in self._pending]
            if missing and not self._manual:
                # The step before never completed: its tensors still hold each rank's own
                # gradient, and an optimizer step used them. Said now, the first moment it shows.
                raise ValueError(f"tensor {name!r} came again before the step's other tensors "
                                 f"{', '.join(map(repr, missing))}: the tensors given since the last exchange "
                                 f"({', '.join(map(repr, self._pending))}) were not reduced and still hold "
                                 "this rank's own gradients. When a step may leave tensors out (a parameter "
                                 "frozen), call grc.flush() after the last tensor of every step")
            raise ValueError(f"tensor {name!r} was given twice in one step; call grc.flush() at the "
                             "end of each step")
        refuse_unwritable(tensor, name)
        flat, restore = edge.to_core(tensor, what=f"gradient {name!r}")
        self._pending[name] = Pending(tensor, flat.copy(), restore)
        if all(learned in self._pending for learned in self._names):
            self._flush_pending()
        return tensor

    def flush(self):
        """Exchange the tensors given since the last exchange now (results are written
        into them), and take the names seen so far as a step's tensors. From the first
        flush on, tensors outside the learned set are accepted too: they wait for the
        next flush."""
        with self._stepping:  # one exchange at a time, as step's (Communicator.step)
            if self._names is None and self._learning:
                self._names = list(self._learning)
            self._manual = True
            self._flush_pending()

    def _flush_pending(self):
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        names = list(pending)
        result = self._reduce(names, [p.flat for p in pending.values()], [p.restore for p in pending.values()])
        offset = 0
        for item in pending.values():
            item.fill(result[offset:offset + item.flat.size])
            offset += item.flat.size

    def exchange(self, tensor, name):
        """One SparDL exchange of ``tensor`` alone, now; returns the averaged result."""
        with self._stepping:
            flat, restore = edge.to_core(tensor, what=f"gradient {name!r}")
            return restore(self._reduce([name], [flat], [restore]))

    # -- one exchange --------------------------------------------------------------------
    def _reduce(self, names, flats, restores):
        key = "|".join(str(n) for n in names)
        transport = self.transport
        if self._engine is None or self._engine.transport is not transport:
            # Made again for another transport (a copy loaded from a pickle: the engine's
            # came back as the name 'torch'), keeping what it learnt of each buffer's h.
            adapted = self._engine.adapted if self._engine is not None else None
            self._engine = SparseAllreduce(transport, self.teams, self.density, self.index_codec, adapted)
        # The density as it is now: a schedule may change compress_ratio during training.
        self._engine.density = self.density
        start = time.perf_counter()
        accumulated, finite = self._accumulate(key, names, flats)
        n = accumulated.size
        if self._agree(key, n, not finite) or n == 0:
            # A NaN/Inf on some rank (every rank gets NaN back and skips the step), or a
            # zero-size parameter exchanged alone in the first step: nothing goes on the
            # links, and the step's dense bytes are counted all the same, as elsewhere.
            self.stats.record(key, dense_bytes=4 * n, encode_seconds=time.perf_counter() - start)
            return np.full(n, np.nan, dtype=np.float32)
        result, residual = self._engine(accumulated, key)
        if isinstance(self.memory, ResidualMemory):
            # Each in its tensor's kind and shape, as the residual memory keeps them (a torch
            # caller's checkpoint of memory.residuals is then tensors, which torch.load's
            # weights_only takes), sharing the engine's fresh buffer.
            offset = 0
            for name, flat, restore in zip(names, flats, restores):
                self.memory.residuals[name] = restore.working(residual[offset:offset + flat.size])
                offset += flat.size
        traffic = self.last_traffic = self._engine.traffic
        self.stats.record(key, bytes_sent=traffic.bytes_sent, dense_bytes=4 * n,
                          encode_seconds=time.perf_counter() - start)
        return result

    def _accumulate(self, key, names, flats):
        """``(accumulated, finite)``: the gradients plus their residuals, as one flat
        float32 buffer of the engine's (which turns it into the residual in place), and
        whether every entry is finite, learnt in the same pass."""
        out = self._engine.accumulator(key, sum(flat.size for flat in flats), isinstance(self.memory, ResidualMemory))
        finite, offset = True, 0
        for name, flat in zip(names, flats):
            part = out[offset:offset + flat.size]
            offset += flat.size
            residual = self.memory.residuals.get(name) if isinstance(self.memory, ResidualMemory) else None
            if residual is not None:
                residual, _ = edge.to_core(residual, what=f"residual of {name!r}")  # ours, or any CPU array
                if residual.size != flat.size:
                    raise ValueError(f"tensor {name!r} has {flat.size} elements but its residual has "
                                     f"{residual.size}; names must be stable and unique per parameter")
            if flat.size == 0:
                continue
            # g + e; with no residual 1·g + 0·g, which is g bit for bit where g is finite
            # (and NaN where it is not, as the test wants)
            status = lib.dr_axpby_finite(1.0, f32(flat), 0.0 if residual is None else 1.0,
                                         f32(flat if residual is None else residual), f32(part), flat.size)
            check(min(status, 0), f"spardl accumulation of {name!r}")
            finite = finite and status == 1
        return out, finite

    def _agree(self, key, n, nonfinite):
        """Check every rank is at the same step with the same layout; return whether any
        rank has a non-finite gradient."""
        transport = self.transport
        density_bits = int(np.float64(self.density).view(np.int64))
        mine = np.array([name_tag(key), n, self.teams, density_bits, int(nonfinite)], dtype=np.int64)
        with transport._guard("spardl handshake", key):
            rows = transport._allgather_int64(mine)
        for column, what in ((0, "the tensors of the step (names)"), (1, "the total gradient size"),
                             (2, "spardl_teams"), (3, "the density")):
            if np.any(rows[:, column] != rows[0, column]):
                values = rows[:, column].tolist() if column in (1, 2) else "differ"
                raise CommunicationError(
                    f"spardl exchange of {key!r}: ranks disagree on {what}: {values} "
                    f"(rank {transport.rank} of {transport.size}); every rank must reduce the same "
                    "tensors with the same settings")
        return bool(rows[:, 4].any())
