"""The base of compressors whose whole payload is one frame made and checked by the C
core (the quantizers). A subclass names its C functions and the attributes that hold
the encoder's parameters; one whose encoding does not fit that shape overrides
``encode``."""
import numpy as np

from .. import edge
from .._native import (all_finite, as_frame_bytes, check, decoded_marker, f32, ffi, lib, name_key,
                       nonfinite_frame, u8)
from ..base import OneFrameCompressor
from ..codecs.workspace import Workspace
from ..state import Outputs


class FrameCtx:
    """What decompress needs: the element count, the way back to the caller's type, and
    the tensor name (its output buffers are reused per name: ``state.Outputs``), and
    ``own`` (``base.OneFrameCompressor``). A compressor that knows whether the tensor it
    compressed was finite keeps that tensor, its flat view and the answer (``source``,
    ``flat``, ``finite``), so the memory's update neither crosses the edge nor sweeps for
    Inf/NaN again (``base.crossed``); None where it does not know. ``finite_result``:
    ``base.vouched_finite``."""

    __slots__ = ("numel", "restore", "name", "own", "source", "flat", "finite", "finite_result")

    def __init__(self, numel, restore, name=None, source=None, flat=None, finite=None):
        self.numel = numel
        self.restore = restore
        self.name = name
        self.own = None
        self.source = source
        self.flat = flat
        self.finite = finite
        self.finite_result = None


class StepKeys:
    """Keys for stochastic rounding: one stream per (tensor name, step, rank), so runs are
    reproducible while ranks draw independent noise (their errors average out)."""

    def __init__(self):
        self.steps = {}

    def next(self, name):
        from ..transports import detect_rank
        step = self.steps.get(name, 0)
        self.steps[name] = step + 1
        return name_key(f"{name}@rank{detect_rank()}", step)


class FramedCompressor(OneFrameCompressor):
    """A tensor holding a NaN or an infinity is not encoded: the non-finite marker frame
    of ``frame_kind`` travels instead, and decodes to NaN on every rank. So the aggregate
    is non-finite (a loss scaler skips the step) and no encoder ever sees the garbage."""

    frame_kind = None  # the enum dr_kind in the frame, e.g. "DR_KIND_QSGD"
    # The C functions, by name: e.g. "dr_qsgd_decode", "dr_qsgd_encode", "dr_qsgd_size".
    decoder = None
    encoder = None
    size = None
    label = None  # names the encoding in error messages: "qsgd of 'layer.weight'"
    params = ()  # attributes holding the encoder's parameters, in the C order
    stochastic = False  # the encoder takes a per-step key (StepKeys) after the parameters
    scratch = None  # the C name of the size of the scratch the encoder takes, if any
    # The C name of a decoder that adds a frame's entries into a running sum, if there
    # is one (a sparse frame): decompress_aggregate adds the other ranks' frames straight
    # into the aggregate, where a dense decode of each and a sum read and wrote it all.
    decoder_add = None
    # The encoder refuses every Inf and NaN (DR_E_NUMERIC) in the sweep it makes anyway:
    # compress then skips a finiteness pass of its own, and encode returns None for them.
    refuses_nonfinite = False

    def __init__(self, average=True, tensors_size_are_same=True):
        super().__init__(average, tensors_size_are_same)
        self.keys = StepKeys()
        self.outputs = Outputs()  # decompress's results, reused per name once released
        # The frames sent, likewise (a payload is written again once nothing holds it),
        # and the encoders' scratch: a fresh 100 MB frame cost as long as its encoding
        # in page faults.
        self.frames = Outputs(keep=1, dtype=np.uint8, grow=True)
        self.work = Workspace()

    def framed(self, name, capacity, encoder, what, nonfinite_none=False):
        """Run ``encoder(buf, cap, written)`` into ``capacity`` bytes of a frame buffer
        for ``name`` (``frames``); return the frame bytes, or None where
        ``nonfinite_none`` and the encoder refused an Inf or a NaN (DR_E_NUMERIC)."""
        frame = self.frames.take(name, max(int(capacity), 1))
        written = ffi.new("size_t *")
        status = encoder(u8(frame), frame.nbytes, written)
        if nonfinite_none and status == lib.DR_E_NUMERIC:
            return None
        check(status, what)
        return frame[:written[0]]

    def scratch_for(self, nbytes):
        """An encoder's ``void *work`` of ``nbytes``, reused from call to call."""
        return ffi.from_buffer(self.work.array("encoder", nbytes, np.uint8))

    def encode(self, flat, name):
        """Return the frame (uint8 array) for the flat float32 tensor: the encoder is
        called as ``encoder(x, n, *params[, key], dtype[, work], buf, cap, written)``
        into ``size(n, *params)`` bytes, with ``scratch(n, *params)`` bytes of work."""
        params = [getattr(self, p) for p in self.params]
        args = [f32(flat), flat.size, *params]
        if self.stochastic:
            args.append(self.keys.next(name))
        args.append(lib.DR_DTYPE_FLOAT32)
        if self.scratch is not None:
            args.append(self.scratch_for(getattr(lib, self.scratch)(flat.size, *params)))
        encoder = getattr(lib, self.encoder)
        return self.framed(name, getattr(lib, self.size)(flat.size, *params),
                           lambda buf, cap, w: encoder(*args, buf, cap, w), f"{self.label} of {name!r}",
                           self.refuses_nonfinite)

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        frame = self.encode(flat, name) if self.refuses_nonfinite or all_finite(flat) else None
        # Either the encoder refused an Inf or a NaN (None) or the sweep above found one.
        finite = frame is not None
        return [restore.wrap(frame if finite else self.nonfinite(flat.size))], \
            FrameCtx(flat.size, restore, name, tensor, flat, finite)

    def nonfinite(self, numel):
        """The marker frame sent instead of a tensor holding an Inf or a NaN."""
        return nonfinite_frame(getattr(lib, self.frame_kind), numel)

    def _decode(self, frame, ctx, into=None):
        """The frame decoded into ``into`` (flat float32, any contents) if given, else into
        a fresh array or this name's output buffer once nothing holds it."""
        what = self._payload_name()
        marker = decoded_marker(frame, getattr(lib, self.frame_kind), ctx.numel, what)
        if marker is not None:
            return marker
        out = into if into is not None else self.outputs.take(ctx.name, ctx.numel)
        check(getattr(lib, self.decoder)(u8(frame), frame.nbytes, f32(out), ctx.numel), what)
        return out

    def aggregate(self, tensors):
        """The sum of the ranks' tensors, finished by ``_finish`` (signSGD's vote,
        EF-signSGD's division by the learning rate; nothing for the others)."""
        if type(self)._finish is FramedCompressor._finish:
            return super().aggregate(tensors)
        total, restore = edge.to_core(sum(tensors))  # a new tensor, even of one rank's
        return restore(self._finish(total))

    def _finish(self, total):
        """What the aggregate does to the sum of the ranks' tensors (flat float32, a
        new array: changed in place and returned)."""
        return total

    def decompress_aggregate(self, payloads, ctx, divisor=1):
        """The ranks' frames decoded one by one (the own frame's decode taken from
        ``lost``, the others' into one scratch buffer, or added straight in by
        ``decoder_add``) and added into the first's:
        0 + t0 + t1 + ..., as Python's sum adds them, so the same bits as decompressing
        each and aggregating, without a dense tensor per rank; then finished and
        divided in place. The result is vouched finite (``ctx.finite_result``) where
        that is known without a sweep: one rank's own decode that ``lost`` found finite,
        or a sum whose last addition (``dr_axpby_finite``) wrote only finite values,
        with the default finish (dividing by a world size keeps finite values finite).
        A subclass that decompresses or aggregates its own way gets the default."""
        if not self._sums_as(FramedCompressor):
            return super().decompress_aggregate(payloads, ctx, divisor)
        what = self._payload_name()
        frames = []
        for payload in payloads:
            frame, = payload
            frames.append(as_frame_bytes(frame, what))
        total, finite = self._take_own(frames[0], ctx) or (self._decode(frames[0], ctx), False)
        # aggregate's sum starts at 0 (-0.0 becomes +0.0), except one rank's unfinished
        # aggregate, which is its decode as it is.
        if len(frames) > 1 or type(self)._finish is not FramedCompressor._finish:
            np.add(total, np.float32(0.0), out=total)
        scratch = None
        for frame in frames[1:]:
            own = self._take_own(frame, ctx)
            if own is not None:
                part = own[0]
            elif self.decoder_add is not None and decoded_marker(frame, getattr(lib, self.frame_kind), ctx.numel,
                                                                 what) is None:
                # total + the frame's entries: where a dense decode holds 0 the sum keeps
                # total's value (no -0.0 is left in it), so the same bits as adding it.
                check(getattr(lib, self.decoder_add)(u8(frame), frame.nbytes, f32(total), ctx.numel), what)
                finite = False  # not known without a sweep (the step makes one)
                continue
            else:
                if scratch is None:
                    scratch = self.outputs.take(None if ctx.name is None else (ctx.name, "part"), ctx.numel)
                part = self._decode(frame, ctx, scratch)
            # total + part (1·a + 1·b: the same bits as np.add), saying whether it is finite
            finite = lib.dr_axpby_finite(1.0, f32(total), 1.0, f32(part), f32(total), total.size)
            check(min(finite, 0), what)
            finite = finite == 1
        if type(self)._finish is not FramedCompressor._finish:
            finite = False
            total = self._finish(total)
        if divisor != 1:
            np.divide(total, np.float32(divisor), out=total)
        result = ctx.restore(total)
        ctx.finite_result = result if finite else None
        return result


def majority_vote(total):
    """signSGD's aggregate, in place on the sum of the ranks' signs (flat float32): +1
    where it is >= 0, else -1; NaN stays NaN."""
    check(lib.dr_sign_vote(f32(total), total.size), "sign vote")
    return total
