"""LGC, learned gradient compression (Abrahamyan et al., arXiv 2103.08870; SPEC §7).

Three stages, counted in steps per tensor name (a step that is not finite does not count):

1. ``lgc_dense_steps`` dense steps: the gradient is all-reduced as is.
2. ``lgc_train_steps`` top-k steps: a leader (rank = step mod world size, so every rank
   leads in turn) picks the top-k indices S of its compensated gradient (k = n·compress_ratio)
   and broadcasts them, coded by a lossless index codec; every rank sends its values on S
   (allgather). The aggregate is their average on S. Rank 0 keeps the (workers, k) value
   matrix, divided by the leader's largest magnitude, in a bounded buffer and trains the
   autoencoder on it (deepreduce.torch.lgc_autoencoder).
3. LGC. Rank 0's autoencoder is broadcast once, at the first stage-3 call, so every rank
   codes with identical weights from then on; it is not trained further.
   - 'ps' (parameter server): the leader broadcasts S, the latent of its values on S and
     their scale; every rank sends its innovation, the ``n·lgc_innovation_ratio`` largest
     of its own values on S (positions coded by the index codec, values float32), in one
     allgather. Every rank then runs every worker's decoder on (leader's latent, that
     worker's innovation), which is what the paper's server does, and averages.
   - 'rar' (ring allreduce): the leader broadcasts S and the scale; every rank encodes its
     own values on S with the shared encoder and the latents are summed by one allreduce
     (a float32 vector, which is what a ring allreduce carries); the sum is decoded once.

Error feedback is LGC's own: each rank keeps, per tensor, what the receivers did not get
of its compensated gradient (its values off S, and on S the difference to what its
decoder rebuilt), so ``memory`` must be 'none'. Decoded values are scaled by a
least-squares gain g >= 0 (ours, not the paper's: 'ps' each worker's own, sent with its
innovation; 'rar' one common gain whose terms ride in the latents' allreduce), so a
worker's error never exceeds its values and error feedback cannot grow however poorly the
autoencoder has learnt. LGC runs its collectives itself inside
``compress`` (like powersgd), so ``communicator`` must be 'allreduce' (the default); its
payload list is empty and ``decompress`` decodes what the collectives brought.

How each tensor travels (``route``): dense in stage 1, and in every stage when it has fewer
than ``lgc_min_numel`` elements (as DeepReduce's min_numel: little to save) or, with
``lgc_dense_ends`` (default True, as in the paper), when it is the first or the last tensor
of a step (learnt from the order of the names in stage 1). A tensor whose k is below the
autoencoder's block (2**depth values: too short for a latent) stays on stage 2's top-k in
stage 3. Every other tensor is coded by the autoencoder in stage 3.

A gradient that is not finite on any rank gives every rank a non-finite aggregate (all
NaN; so AMP's GradScaler skips the step) and changes no state (so ``rollback`` has nothing
to take back): the bad rank sends the non-finite marker frame in place of its data, every rank sees it after the same collective, and nothing is
committed. Nobody is left waiting: every rank runs the same collectives.
"""
import math
import time

import numpy as np

from .. import edge
from .._native import all_finite, check, f32, ffi, lib, u32
from ..base import Compressor
from ..checks import flag, fraction, integer, number
from ..codecs.index import LosslessIndex
from ..errors import FrameError
from ..params import LGC_KEYS
from ..transports.binding import TransportAtFirstUse
from . import _lgc_frames as frames

STAGE_DENSE, STAGE_TOPK, STAGE_LGC = 1, 2, 3
STATE_FORMAT = 1
# The params keys LGC reads beside GRACE's, with their defaults (the table, with what each
# key means, is deepreduce.params.LGC_KEYS; compress_ratio defaults to 1e-3 for lgc).
DEFAULTS = {key: default for key, (default, _) in LGC_KEYS.items()}


def _torch_autoencoder():
    try:
        from ..torch import lgc_autoencoder
    except ImportError as exc:
        raise ImportError("compressor='lgc' trains an autoencoder with PyTorch: pip install 'deepreduce[torch]'") from exc
    return lgc_autoencoder


def _step_count(params, key, least=0):
    """params[key] as a count >= ``least`` (of steps, elements): ParameterTypeError for a
    string or a bool, ValueError for a fraction or a number below ``least``."""
    return integer(params[key], key, least, 2 ** 63 - 1)


class Selector:
    """Exact top-k of |x| in C (ascending uint32 indices), with a reused workspace."""

    def __init__(self):
        self._work = np.empty(0, dtype=np.uint8)

    def __call__(self, x, count, what):
        indices = np.empty(count, dtype=np.uint32)
        needed = lib.dr_topk_workspace_size(x.size, count)
        if self._work.nbytes < needed:
            self._work = np.empty(needed, dtype=np.uint8)
        check(lib.dr_topk_select(f32(x), x.size, count, u32(indices), ffi.from_buffer(self._work)), what)
        return indices


def gather(x, indices):
    out = np.empty(indices.size, dtype=np.float32)
    check(lib.dr_gather(f32(x), x.size, u32(indices), indices.size, f32(out)), "LGC gather")
    return out


def scatter(indices, values, n):
    out = edge.zeros(n)
    check(lib.dr_scatter(u32(indices), f32(np.ascontiguousarray(values, dtype=np.float32)), indices.size,
                         f32(out), n), "LGC scatter")
    return out


def value_order(values):
    """The order that sorts ``values`` descending (stable, so the same on every rank): the
    autoencoder codes the sorted values, a smooth curve it reconstructs far better than
    values in index order, whose neighbours are unrelated."""
    return np.argsort(-values, kind="stable").astype(np.uint32)


def scale_of(values):
    """The leader's largest magnitude: every worker's values are divided by it before
    coding (1 where all are zero)."""
    s = float(lib.dr_abs_max(f32(values), values.size))
    return s if s > 0.0 else 1.0


def clamp_gain(dot, norm2):
    """The least-squares gain dot / norm2, never negative, and 0 when nothing was decoded
    or the terms overflowed (then nothing is sent of the values, and error feedback keeps
    them whole: a NaN gain was kept in the residual, and every later step was NaN)."""
    gain = float(dot) / float(norm2) if norm2 > 0.0 else 0.0
    return gain if math.isfinite(gain) and gain > 0.0 else 0.0


def least_squares_gain(decoded, values):
    """The factor g >= 0 that makes g * decoded closest to values. Scaling the decoder's
    output by it makes every worker's error at most its values' norm, so error feedback
    does not grow past that however poorly the autoencoder has learnt. The sums are in
    float64: in float32 they overflow from values of about 1e19 on."""
    decoded = decoded.astype(np.float64)
    return clamp_gain(decoded @ values, decoded @ decoded)


class Timings:
    """Seconds spent per kind of work, summed over calls (the docs' split of a step):
    encode (selection, coding, latent), exchange (collectives), decode, train."""

    def __init__(self):
        self.seconds = dict.fromkeys(("encode", "exchange", "decode", "train"), 0.0)
        self._mark = time.perf_counter()

    def start(self):
        self._mark = time.perf_counter()

    def lap(self, kind):
        now = time.perf_counter()
        self.seconds[kind] += now - self._mark
        self._mark = now


class LGCCtx:
    """One call's local result. ``finish`` (run by decompress) decodes what the
    collectives brought and commits the new state; ``result`` is then the aggregate."""

    __slots__ = ("restore", "wire_bytes", "finish", "result")

    def __init__(self, wire_bytes, finish=None, result=None):
        self.restore, self.wire_bytes = None, wire_bytes  # restore: set by compress
        self.finish, self.result = finish, result


class LGCCompressor(TransportAtFirstUse, Compressor):
    # The module the autoencoder comes from, looked up where used rather than kept: an
    # attribute holding a module cannot be pickled or deep-copied (a checkpoint).
    autoencoder_module = property(lambda self: _torch_autoencoder())

    def __init__(self, variant=DEFAULTS["lgc_variant"], dense_steps=DEFAULTS["lgc_dense_steps"],
                 train_steps=DEFAULTS["lgc_train_steps"], compress_ratio=1e-3,
                 innovation_ratio=DEFAULTS["lgc_innovation_ratio"], channels=DEFAULTS["lgc_channels"],
                 latent_channels=DEFAULTS["lgc_latent_channels"], ae_lr=DEFAULTS["lgc_lr"],
                 buffer_size=DEFAULTS["lgc_buffer"], replay=DEFAULTS["lgc_replay"],
                 train_iters=DEFAULTS["lgc_train_iters"], seed=DEFAULTS["lgc_seed"],
                 dense_ends=DEFAULTS["lgc_dense_ends"], min_numel=DEFAULTS["lgc_min_numel"],
                 index=DEFAULTS["lgc_index"], transport=None, world_size=None):
        super().__init__(average=True, tensors_size_are_same=False)
        _torch_autoencoder()  # PyTorch is needed: say so now rather than at the first step
        if variant not in self.autoencoder_module.VARIANTS:
            raise ValueError(f"lgc_variant must be 'ps' or 'rar', got {variant!r}")
        dense_ends = flag(dense_ends, "lgc_dense_ends")
        if dense_ends and dense_steps == 0:
            raise ValueError("lgc_dense_ends needs at least one dense step to learn which tensors come first "
                             "and last: set lgc_dense_steps >= 1 or lgc_dense_ends=False")
        self.variant = variant
        self.dense_steps, self.train_steps = dense_steps, train_steps
        self.compress_ratio, self.innovation_ratio = compress_ratio, innovation_ratio
        self.dense_ends = dense_ends
        self.min_numel = min_numel
        self.autoencoder_module.check_sizes(channels, latent_channels)
        self.ae_options = dict(channels=tuple(channels), latent_channels=latent_channels,
                               lr=number(ae_lr, "lgc_lr", 0.0, low_open=True),
                               buffer_size=buffer_size, replay=replay, iterations=train_iters,
                               seed=integer(seed, "lgc_seed", 0, 2**63 - 1))
        self.block = 1 << len(channels)
        self.frames = frames.FrameCodec(LosslessIndex(index))
        self.select = Selector()
        self.timings = Timings()
        self._bind_later(transport, world_size)
        # State (what state_dict holds):
        self.steps = {}        # name -> finite steps taken
        self.order = []        # names in the order of their first call (first/last tensor)
        self.residuals = {}    # name -> float32 error feedback of the compressed tensors
        self.autoencoder = None  # built at the first stage-2 or stage-3 call
        self.synced = False    # rank 0's autoencoder has been broadcast (stage 3 began)

    @classmethod
    def from_params(cls, params):
        if params["memory"] != "none":
            raise ValueError(f"compressor='lgc' keeps its own error feedback; use memory='none', "
                             f"not {params['memory']!r}")
        if params["communicator"] != "allreduce":
            raise ValueError("compressor='lgc' runs its own collectives (allgather for 'ps', allreduce for "
                             f"'rar'); leave communicator='allreduce' (the default), not {params['communicator']!r}")
        p = {**DEFAULTS, **params}
        if p["lgc_index"] not in ("rice", "ef", "varint"):
            raise ValueError(f"lgc_index must be a lossless index codec (rice, ef, varint), got {p['lgc_index']!r}")
        return cls(variant=p["lgc_variant"], dense_steps=_step_count(p, "lgc_dense_steps"),
                   train_steps=_step_count(p, "lgc_train_steps"), compress_ratio=fraction(p["compress_ratio"], "compress_ratio"),
                   innovation_ratio=fraction(p["lgc_innovation_ratio"], "lgc_innovation_ratio"), channels=p["lgc_channels"],
                   latent_channels=p["lgc_latent_channels"], ae_lr=p["lgc_lr"],
                   # 0 samples kept or 0 Adam steps: the autoencoder would never learn, and
                   # stage 3 would code with its random initial weights.
                   buffer_size=_step_count(p, "lgc_buffer", 1), replay=_step_count(p, "lgc_replay"),
                   train_iters=_step_count(p, "lgc_train_iters", 1),
                   seed=p["lgc_seed"], dense_ends=p["lgc_dense_ends"],
                   min_numel=_step_count(p, "lgc_min_numel"), index=p["lgc_index"],
                   transport=p["transport"], world_size=p["world_size"])

    # -- which stage, which tensors ------------------------------------------------------
    def stage(self, name):
        step = self.steps.get(name, 0)
        if step < self.dense_steps:
            return STAGE_DENSE
        return STAGE_TOPK if step < self.dense_steps + self.train_steps else STAGE_LGC

    STAGE_LABELS = {STAGE_DENSE: "stage 1 (dense)", STAGE_TOPK: "stage 2 (top-k, training the autoencoder)",
                    STAGE_LGC: "stage 3 (LGC)"}

    def stage_label(self):
        """The stage the next step runs in (of the tensor furthest behind), for logs."""
        stage = min((self.stage(name) for name in self.order), default=STAGE_DENSE)
        return self.STAGE_LABELS[stage] + (f", {self.variant}" if stage == STAGE_LGC else "")

    def topk_count(self, numel):
        return max(1, int(numel * self.compress_ratio))

    def route(self, name, numel):
        """How ``name`` travels this step: 'dense', 'topk' (stage 2, or a tensor whose k
        is below the autoencoder's block) or 'lgc'."""
        stage = self.stage(name)
        if stage == STAGE_DENSE or numel < self.min_numel:
            return "dense"
        if self.dense_ends and len(self.order) < 3:
            raise ValueError(f"lgc_dense_ends keeps the first and the last tensor of a step dense, and a step "
                             f"here has {len(self.order)} tensor(s) (fused into one bucket?): every tensor "
                             "would travel dense; set lgc_dense_ends=False")
        if self.dense_ends and name in (self.order[0], self.order[-1]):
            return "dense"
        return "lgc" if stage == STAGE_LGC and self.topk_count(numel) >= self.block else "topk"

    # -- the GRACE roles -----------------------------------------------------------------
    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"gradient {name!r}")
        if name not in self.steps:
            self.order.append(name)
            self.steps[name] = 0
        residual = self.residuals.get(name)
        compensated = flat + residual if residual is not None else flat.copy()
        finite = all_finite(compensated)
        route = self.route(name, flat.size)
        self.timings.start()
        if route == "dense":
            ctx = self._dense(compensated, name)
        else:
            if self.autoencoder is None:
                self.autoencoder = self.autoencoder_module.LGCAutoencoder(
                    self.variant, self.transport.size, **self.ae_options)
            elif self.autoencoder.workers != self.transport.size:
                # A state saved on another world size: its decoders are one per worker there
                # (more ranks failed with an IndexError inside torch, fewer went on unsaid).
                raise ValueError(f"this LGC state was trained on {self.autoencoder.workers} workers and this "
                                 f"run has {self.transport.size}: LGC's autoencoder has a decoder per worker, so "
                                 "load it into a run of as many, or start LGC afresh")
            ctx = self._sparse(compensated if finite else np.zeros_like(compensated), finite, name, route)
        ctx.restore = restore
        return [], ctx

    def decompress(self, tensors, ctx):
        if tensors:
            raise ValueError("LGC payloads never travel through the communicator (it runs its own "
                             "collectives); use communicator='allreduce' and memory='none'")
        if ctx.finish is not None:
            self.timings.start()
            ctx.result, ctx.finish = ctx.finish(), None
            self.timings.lap("decode")
        return ctx.restore(ctx.result)

    def wire_bytes(self, tensors, ctx):
        return ctx.wire_bytes

    # -- dense ---------------------------------------------------------------------------
    def _dense(self, compensated, name):
        size = self.transport.size
        summed = self.transport.allreduce(compensated, f"{name}/lgc-dense")
        self.timings.lap("exchange")
        result = summed / size
        if all_finite(result):  # the same verdict on every rank: the sum is the same
            self.steps[name] += 1
            self.residuals.pop(name, None)
        return LGCCtx(compensated.nbytes, result=result)

    # -- stages 2 and 3 ------------------------------------------------------------------
    def _sparse(self, x, finite, name, route):
        """Round 1: the leader's broadcast; round 2: every rank's part. Returns the ctx."""
        t = self.transport
        n, k = x.size, self.topk_count(x.size)
        leader = self.steps[name] % t.size
        if self.stage(name) == STAGE_LGC and not self.synced:
            sync_bytes = self._sync_autoencoder()
        else:
            sync_bytes = 0
        lead_type = frames.SET if route == "topk" else (frames.PS_LEAD if self.variant == "ps" else frames.RAR_LEAD)
        sent = sync_bytes
        if t.rank == leader:
            lead = self._lead_frame(x, k, lead_type, finite, name)
            sent += lead.nbytes
        else:
            lead = np.empty(0, dtype=np.uint8)
        self.timings.lap("encode")
        got = t.broadcast(lead, leader, f"{name}/lgc-lead")
        self.timings.lap("exchange")
        what = f"LGC leader frame of {name!r} from rank {leader}"
        latent_size = self.autoencoder.latent_size(k)
        head = self.frames.open(got, lead_type, n, what, count=k,
                                latent=latent_size if lead_type == frames.PS_LEAD else None)
        if head.nonfinite:  # every rank learnt it from the same broadcast: all skip round 2
            return LGCCtx(sent, result=edge.nan_filled(n))
        # Stage 3 works on S in the order of the leader's values; everything after is
        # order-free (gather, scatter and the residual take indices in any order).
        S = head.indices if head.order is None else head.indices[head.order]
        mine = gather(x, S)
        if route == "topk":
            return self._topk_round(x, mine, S, finite, name, leader, sent)
        scale = float(head.sections["scale"][0])
        if not scale > 0.0:  # the leader's largest magnitude, or 1 (scale_of): never 0 or below
            raise FrameError(f"{what}: scale {scale}, which no LGC leader sends (its largest magnitude, > 0)")
        if self.variant == "ps":
            return self._ps_round(x, mine, S, head.sections["latent"], scale, finite, name, sent)
        return self._rar_round(x, mine, S, scale, finite, name, sent)

    def _lead_frame(self, x, k, lead_type, finite, name):
        if not finite:
            return self.frames.nonfinite(x.size)
        S = self.select(x, k, f"LGC top-k of {name!r}")
        if lead_type == frames.SET:
            return self.frames.build(frames.SET, x.size, S)
        values = gather(x, S)
        order = value_order(values)
        scale = np.array([scale_of(values)], dtype=np.float32)
        if lead_type == frames.RAR_LEAD:
            return self.frames.build(frames.RAR_LEAD, x.size, S, order, scale=scale)
        latent = self.autoencoder.encode(values[order] / scale[0])
        return self.frames.build(frames.PS_LEAD, x.size, S, order, latent=latent, scale=scale)

    def _gather_frames(self, frame, frame_type, name, numel, count=None):
        """Allgather one frame per rank; the parsed frames, or None if any rank's
        gradient was not finite."""
        self.timings.lap("encode")
        gathered = self.transport.allgather(frame, f"{name}/lgc-{frames.TYPE_NAMES[frame_type]}")
        self.timings.lap("exchange")
        parsed = [self.frames.open(g, frame_type, numel, f"LGC {frames.TYPE_NAMES[frame_type]} frame of "
                                   f"{name!r} from rank {r}", count=count) for r, g in enumerate(gathered)]
        return None if any(p.nonfinite for p in parsed) else parsed

    def _topk_round(self, x, mine, S, finite, name, leader, sent):
        n, k = x.size, S.size
        frame = self.frames.build(frames.VALUES, k, values=mine) if finite else self.frames.nonfinite(k)
        parsed = self._gather_frames(frame, frames.VALUES, name, k, count=k)
        sent += frame.nbytes
        if parsed is None:
            return LGCCtx(sent, result=edge.nan_filled(n))
        rows = np.stack([p.sections["values"] for p in parsed])
        # Rank 0 trains in stage 2 on the tensors the autoencoder will code; its weights go
        # to everyone when stage 3 begins.
        # A tensor that lags a step behind the others (one whose gradient was not finite
        # once) is still in stage 2 after the weights went out: it trains no more, or rank
        # 0's weights would part from everyone else's.
        if self.transport.rank == 0 and self.stage(name) == STAGE_TOPK and k >= self.block and not self.synced:
            self.autoencoder.add_sample(rows, self.innovation_count(n, k))
            self.autoencoder.train()
            self.timings.lap("train")

        def finish():
            self._commit(name, x, S, mine)
            return scatter(S, rows.sum(axis=0) / len(rows), n)
        return LGCCtx(sent, finish=finish)

    def innovation_count(self, n, k):
        return min(k, max(1, int(n * self.innovation_ratio)))

    def _ps_round(self, x, mine, S, latent, scale, finite, name, sent):
        n, k = x.size, S.size
        if finite:
            positions = self.select(mine, self.innovation_count(n, k), f"LGC innovation of {name!r}")
            values = gather(mine, positions)
            decoded = self._ps_decode(latent, scale, positions, values, self.transport.rank, k)
            gain = np.array([least_squares_gain(decoded, mine)], dtype=np.float32)
            frame = self.frames.build(frames.INNOVATION, k, positions, values=values, gain=gain)
        else:
            frame = self.frames.nonfinite(k)
        parsed = self._gather_frames(frame, frames.INNOVATION, name, k)
        sent += frame.nbytes
        if parsed is None:
            return LGCCtx(sent, result=edge.nan_filled(n))

        def finish():
            rebuilt = []
            for worker, p in enumerate(parsed):
                out = self._ps_decode(latent, scale, p.indices, p.sections["values"], worker, k)
                out *= p.sections["gain"][0]
                check(lib.dr_scatter(u32(p.indices), f32(p.sections["values"]), p.indices.size, f32(out), k),
                      "LGC innovation")  # the innovation's own entries are exact
                rebuilt.append(out)
            self._commit(name, x, S, rebuilt[self.transport.rank])
            return scatter(S, sum(rebuilt) / len(rebuilt), n)
        return LGCCtx(sent, finish=finish)

    def _ps_decode(self, latent, scale, positions, values, worker, k):
        """Decoder ``worker`` on the leader's latent and that worker's innovation,
        back at the values' scale."""
        return self.autoencoder.decode(latent, k, worker, scatter(positions, values / scale, k)) * scale

    def _rar_round(self, x, mine, S, scale, finite, name, sent):
        n, k = x.size, S.size
        size = self.autoencoder.latent_size(k)
        # [latent, <own decoded, own values>, |own decoded|^2, non-finite count]: one
        # allreduce sums the latents, the terms of the common least-squares gain and the
        # count of ranks whose gradient was not finite.
        vector = np.zeros(size + 3, dtype=np.float32)
        own = None
        if finite:
            vector[:size] = self.autoencoder.encode(mine / scale)
            own = self.autoencoder.decode(vector[:size], k)
            # The gain's terms at the leader's scale, where they are of the order of k, so
            # their float32 sum does not overflow; the gain itself does not depend on it.
            scaled = own.astype(np.float64)
            vector[size:size + 2] = float(scaled @ (mine / scale)), float(scaled @ scaled)
            own *= scale
        else:
            vector[-1] = 1.0
        self.timings.lap("encode")
        summed = self.transport.allreduce(vector, f"{name}/lgc-latent")
        self.timings.lap("exchange")
        sent += vector.nbytes
        if summed[-1] != 0.0:
            return LGCCtx(sent, result=edge.nan_filled(n))
        gain = clamp_gain(summed[size], summed[size + 1])

        def finish():
            total = self.autoencoder.decode(summed[:size], k) * (scale * gain)
            self._commit(name, x, S, own * gain)
            return scatter(S, total / self.transport.size, n)
        return LGCCtx(sent, finish=finish)

    def _commit(self, name, x, S, rebuilt):
        """The step was finite everywhere: count it and keep as error feedback what the
        receivers did not get of this rank's compensated gradient x."""
        residual = x  # x is this call's own copy
        check(lib.dr_scatter(u32(S), f32(gather(x, S) - rebuilt), S.size, f32(residual), x.size), "LGC residual")
        self.residuals[name] = residual
        self.steps[name] += 1

    def _sync_autoencoder(self):
        """Broadcast rank 0's trained weights: from stage 3 on every rank codes with the
        same autoencoder. Returns the bytes this rank sent."""
        weights = self.autoencoder.flat_weights()
        got = self.transport.broadcast(weights if self.transport.rank == 0 else np.empty(0, dtype=np.float32), 0,
                                       "lgc/autoencoder")
        if got.size != weights.size:
            raise ValueError(f"LGC autoencoder of {got.size} weights from rank 0, this rank's has {weights.size}: "
                             "every rank must use the same lgc_channels and lgc_latent_channels")
        self.autoencoder.set_flat_weights(got)
        self.synced = True
        self.timings.lap("exchange")
        return weights.nbytes if self.transport.rank == 0 else 0

    # -- checkpoints ---------------------------------------------------------------------
    def state_dict(self):
        """This rank's state (its error feedback is its own: save one per rank)."""
        return {"format": STATE_FORMAT, "variant": self.variant, "steps": dict(self.steps),
                "order": list(self.order), "residuals": {k: v.copy() for k, v in self.residuals.items()},
                "synced": self.synced,
                "autoencoder": None if self.autoencoder is None else self.autoencoder.state_dict(),
                "workers": None if self.autoencoder is None else self.autoencoder.workers}

    def load_state_dict(self, state):
        if state.get("format") != STATE_FORMAT or state.get("variant") != self.variant:
            raise ValueError(f"not an LGC state of format {STATE_FORMAT} for variant {self.variant!r} "
                             f"(format {state.get('format')!r}, variant {state.get('variant')!r})")
        self.steps = {k: int(v) for k, v in state["steps"].items()}
        self.order = list(state["order"])
        self.residuals = {k: np.array(v, dtype=np.float32) for k, v in state["residuals"].items()}
        self.synced = bool(state["synced"])
        self.autoencoder = None
        if state["autoencoder"] is not None:
            self.autoencoder = self.autoencoder_module.LGCAutoencoder(self.variant, state["workers"],
                                                                      **self.ae_options)
            self.autoencoder.load_state_dict(state["autoencoder"])

