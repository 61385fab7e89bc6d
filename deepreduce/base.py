"""The three GRACE roles, with GRACE's signatures.

A ``Communicator`` holds a ``Compressor`` and a ``Memory`` and runs, for each gradient,
``compensate -> compress -> update -> send_receive`` (the first three in one call where
the memory has a fused path for the compressor: ``encode``). Memory is updated before any
communication, so a failed collective never leaves residuals half-applied. ``ctx`` stays
on the rank that made it: every rank decompresses every rank's payload with its own ctx.

``step`` hands the memory and the compressor the caller's kind of tensor (a torch
tensor when the caller passed torch, NumPy otherwise) in the caller's shape, as CPU
float32 sharing memory with the core's flat buffer (see ``deepreduce.edge``), so parts
written against GRACE's classes with torch operations mix freely with ours. The result
is turned back into the caller's tensor type, dtype, device and shape.
"""
import inspect
import sys
import threading
import time
from abc import ABC, abstractmethod
from functools import partial

import numpy as np

from . import edge
from . import stats as _stats
from ._native import all_finite, as_frame_bytes, check, f32, lib, parse_frame, result_finite, u8
from .errors import CommunicationError, DeepReduceError, FrameError
from .state import Outputs
from .transports.binding import TransportAtFirstUse, unbound_state


class Compressor(ABC):
    """Turns a tensor into payload tensors and back.

    ``average``: the communicator divides the aggregate by the world size.
    ``tensors_size_are_same``: every rank's payload has the same size for a given tensor
    (lets the allgather skip exchanging sizes; a wrong True would be a bug, so compressors
    with data-dependent sizes say False).
    """

    # Whether ``lost`` may be handed the compressed tensor's own memory as ``out`` (it
    # then rewrites it in place): true where neither the payload nor the ctx reads that
    # tensor once ``lost`` has run. The residual memory then keeps the compensated tensor
    # as the residual instead of copying it (``ResidualMemory.update``).
    lost_in_place = False

    # Whether the payload tensors are arrays of the compressor's own that nothing reads
    # once the exchange has them (not the tensor it was given, not state it keeps): an
    # allreduce may then sum into them in place, where it otherwise sums in a copy.
    payload_is_scratch = False

    # Whether the compressor works on a tensor's shape, not only its values (PowerSGD
    # factors each matrix by its rows and columns, and sends a vector as it is): a flat
    # buffer that packs several tensors, such as a DDP bucket, is then exchanged one
    # tensor at a time, each with its own shape.
    needs_shapes = False

    def __init__(self, average=True, tensors_size_are_same=True):
        self.average = average
        self.tensors_size_are_same = tensors_size_are_same

    @abstractmethod
    def compress(self, tensor, name):
        """Return ``(tensors, ctx)``: the payload list and what decompress needs locally."""

    @abstractmethod
    def decompress(self, tensors, ctx):
        """Rebuild a tensor from one rank's payload list and the local ctx."""

    def wire_bytes(self, tensors, ctx):
        """Bytes this rank puts on the wire for one compress (default: the payload's).
        Compressors that communicate inside compress (powersgd) override it."""
        total = 0
        for t in tensors:  # a loop: a generator cost a twentieth of a 'none' step
            total += payload_nbytes(t)
        return total

    def _payload_name(self):
        """Names the payload in error messages."""
        return f"{type(self).__name__} payload"

    def aggregate(self, tensors):
        """Combine the decompressed tensors of all ranks (default: their sum)."""
        return tensors[0] if len(tensors) == 1 else sum(tensors)

    def decompress_aggregate(self, payloads, ctx, divisor=1):
        """Every rank's payload (one payload list per rank, in rank order) decompressed
        with this rank's ctx, aggregated, and divided by ``divisor`` (the communicator's
        average; 1: none). The default is exactly that; a compressor whose payloads can be
        summed straight into one tensor overrides it (``Sparsifier``), with the same
        result."""
        aggregated = self.aggregate([self.decompress(payload, ctx) for payload in payloads])
        return aggregated / divisor if divisor != 1 else aggregated

    def _sums_as(self, cls):
        """Whether this compressor decompresses and aggregates as ``cls`` does: ``cls``'s
        own ``decompress_aggregate``, which sums the payloads straight into one tensor,
        holds for it then (a subclass that changed either, or a function set on the
        instance in place of either, gets the default, which calls it)."""
        return keeps_methods(self, cls, _SUMMING)

    def lost(self, flat, tensors, ctx, out):
        """Write into ``out`` (flat float32) what compressing ``flat`` lost:
        flat − decompress(tensors, ctx), the residual error feedback keeps. The default
        decompresses; compressors that send some entries exactly override it."""
        sent, _ = edge.to_core(self.decompress(tensors, ctx), what="decompressed tensor")
        check(lib.dr_axpby(1.0, f32(flat), -1.0, f32(sent), f32(out), flat.size), "residual")

    def rollback(self, name):
        """Take back what this step's compress changed in the state kept for ``name``:
        the step's aggregate was non-finite, so the optimizer skips it. Compressors with
        state (signum's momentum) override this; the default has none."""

    @classmethod
    def from_params(cls, params):
        """Build from a params dict (keys and defaults of ``grace_from_params``)."""
        return cls()


class OneFrameCompressor(Compressor):
    """Base of compressors whose payload is one frame, decoded by ``_decode(frame, ctx)``
    into a flat float32 array. With residual memory, this rank's frame is decoded twice
    per step: by the memory (``lost``) and by the communicator, which decodes every rank's
    payload, this one's included. ``lost`` keeps its decode in ``ctx.own`` and the first
    decompress of the same bytes takes it: decoding is a function of the bytes. The ctx
    needs an ``own`` slot, None until ``lost`` runs. ``lost`` also keeps whether that
    decode is known finite: its residual came out finite (``dr_axpby_finite``), and a
    finite tensor minus an Inf or a NaN is not."""

    @abstractmethod
    def _decode(self, frame, ctx):
        """The frame (uint8 array) decoded into a flat float32 array the caller owns."""

    def lost(self, flat, tensors, ctx, out):
        # A subclass that decompresses its own way keeps the default.
        if type(self).decompress is not OneFrameCompressor.decompress:
            return super().lost(flat, tensors, ctx, out)
        frame = as_frame_bytes(tensors[0], self._payload_name())
        decoded = self._decode(frame, ctx)
        finite = lib.dr_axpby_finite(1.0, f32(flat), -1.0, f32(decoded), f32(out), flat.size)
        check(min(finite, 0), "residual")
        ctx.own = (frame, decoded, finite == 1)

    def _take_own(self, frame, ctx):
        """``(decoded, finite)``: ``lost``'s decode and whether it is known finite, if
        ``frame`` holds the bytes of this rank's own frame, else None. Handed out once, as
        a fresh decode would be (a caller may sum into it)."""
        own = getattr(ctx, "own", None)  # a ctx made elsewhere may lack the slot
        if own is not None and lib.dr_bytes_same(u8(frame), frame.nbytes, u8(own[0]), own[0].nbytes):
            ctx.own = None
            return own[1], own[2]
        return None

    def decompress(self, tensors, ctx):
        payload, = tensors
        frame = as_frame_bytes(payload, self._payload_name())
        own = self._take_own(frame, ctx)
        return ctx.restore(own[0] if own is not None else self._decode(frame, ctx))


class Memory(ABC):
    """Error feedback: what a compressor dropped is added back before the next round."""

    # A memory may do a step's compensate, ``compressor.compress`` and update in one go,
    # with the same bits and state as the three calls: ``fused_encode(tensor, name,
    # compressor, restore)`` (``encode``'s arguments) returns their ``(tensors, ctx)``,
    # or None where it has no such path for that compressor. None here: the step makes
    # the three calls (``encode``), without a call to find that out.
    fused_encode = None

    @abstractmethod
    def compensate(self, tensor, name):
        """Return the tensor to compress: the gradient corrected by what was kept back."""

    def update(self, tensor, name, compressor, tensors, ctx):
        """Remember what compression lost for ``name`` (default: nothing)."""

    def rollback(self, name):
        """Take back what this step changed in the state kept for ``name`` (since its
        compensate): the step's aggregate was non-finite on some rank, so the optimizer
        (a mixed-precision loss scaler) skips it. Memories with per-name state override
        this; the default has none."""

    def forget(self, name):
        """Drop what is kept for ``name``: its compensated tensor was just sent exactly
        (auto_off's dense path), so nothing was lost. Memories with per-name state
        override this; the default has none to drop."""

    @classmethod
    def from_params(cls, params, compressor):
        return cls()


# The methods a training loop calls: GRACE's step, the Horovod flavour's pair, SparDL's
# flush and exchange (the DDP hook's).
ENTRY_POINTS = ("step", "send_step", "receive_step", "exchange", "flush")


def keep_out_of_torch_compile(cls):
    """torch.compile traces into what a compiled function calls, and so into a step: NumPy,
    CFFI and the C core, where it failed ("cannot create weak reference to
    '_cffi_backend.Lib' object"). ``torch.compiler.disable`` keeps a function out of the
    graph (it runs as Python, at a graph break; about 1 µs a call) and needs torch, which
    deepreduce does not import: so the entry points of ``cls`` and its bases are wrapped
    when a communicator of it is made in a process that has imported torch (a script
    that compiles has, before it builds its communicator)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    for klass in cls.__mro__:
        for name in ENTRY_POINTS:
            method = klass.__dict__.get(name)
            # plain functions only: a staticmethod or classmethod wrapped so would lose its binding
            if inspect.isfunction(method) and not getattr(method, "_torchdynamo_disable", False):
                setattr(klass, name, torch.compiler.disable(method))


class Communicator(TransportAtFirstUse, ABC):
    """Sends compressed tensors between ranks through a transport.

    ``world_size`` may be None: it is then taken from the transport bound at the first
    ``step`` (GRACE scripts may build the communicator before the process group exists).
    ``transport`` may be a Transport object or one of 'torch', 'mpi', 'local'; by
    default the one the program has initialised is used.
    """

    # Bytes a rank sends over the links per byte of its payload, P ranks (auto_off's model
    # of a compressed exchange with a known bandwidth): an allgather's rank sends its
    # payload on to the P - 1 others; a ring allreduce 2(P - 1)/P of it.
    @staticmethod
    def link_bytes_per_payload_byte(size):
        return size - 1

    def __init__(self, compressor, memory, world_size=None, transport=None, stats=None, auto_off=None):
        self.compressor = compressor
        self.memory = memory
        if auto_off is not None and not getattr(compressor, "average", True):
            # The dense path averages; these compressors' aggregates are a vote or a sum
            # (signsgd, signum, efsignsgd): the update's scale jumped at every switch.
            raise ValueError(f"auto_off sends a tensor dense as an average, but {type(compressor).__name__}'s "
                             "aggregate is not one (a vote or a sum): leave auto_off off with it")
        self.auto_off = auto_off  # an AutoOff, or None to always compress
        self._bind_later(transport, world_size)  # ``self.transport``: bound at the first step
        self.stats = stats if stats is not None else _stats.GLOBAL
        # Arrays a step makes afresh (results, copies), per use and tensor name: reused
        # once nothing refers to them.
        self.buffers = Outputs()
        self._stepping = threading.RLock()
        keep_out_of_torch_compile(type(self))

    # -- binding ------------------------------------------------------------------
    def __getstate__(self):
        # A copy (pickled or deep-copied) binds its own transport at its first step, and
        # records into its process's GLOBAL stats where the original recorded into its.
        state = unbound_state(self)
        state.pop("_stepping", None)  # a lock: each copy has its own
        if self.stats is _stats.GLOBAL:
            state["stats"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._stepping = threading.RLock()
        if self.stats is None:
            self.stats = _stats.GLOBAL

    @property
    def world_size(self):
        if self._world_size is not None:
            return self._world_size
        if self._transport is not None:
            return self._transport.size
        from .transports import detect_world_size
        return detect_world_size()

    @world_size.setter
    def world_size(self, value):
        self._world_size = value

    @property
    def rank(self):
        return self.transport.rank

    # -- the GRACE step -------------------------------------------------------------
    @abstractmethod
    def send_receive(self, tensors, name, ctx):
        """Exchange the payload with every rank and return the aggregated tensor."""

    def codec(self):
        """The compressor step() applies; a communicator may wrap the public one
        (alltoall compresses chunk by chunk)."""
        return self.compressor

    def step(self, tensor, name):
        """The averaged (or aggregated) ``tensor`` of every rank under ``name``. One step
        at a time per communicator: its compressor's and memory's scratch is shared by
        its tensors, so calls from several threads take turns (they interleaved inside
        the C kernels, and gave wrong results). Every rank must still step the same
        tensors in the same order."""
        with self._stepping:
            return self._step(tensor, name)

    def _step(self, tensor, name):
        # GRACE's TensorFlow flavour crosses through NumPy (a torch tensor or a NumPy
        # array, by their exact classes, is no TensorFlow tensor: no look for one).
        if type(tensor) not in edge.NOT_TENSORFLOW and edge.is_tensorflow(tensor):
            from .tensorflow.crossing import step_tensorflow
            return step_tensorflow(self, [tensor], [name])[0]
        # Memories and compressors see the caller's kind and shape (powersgd needs the
        # matrix shape; a GRACE-style part needs torch), as CPU float32.
        working, numel, restore = edge.to_working(tensor, "gradient", name)
        transport = self.transport  # bind now: a missing process group fails before any state changes
        if self.auto_off is not None and self.auto_off.wants_dense(name, transport, numel):
            return restore(self._dense_step(working, name))
        codec = self.codec()
        start = time.perf_counter()
        tensors, ctx = encode(self.memory, codec, working, name, restore)
        encode_seconds = time.perf_counter() - start
        self._decode_seconds = 0.0
        result = self.send_receive(tensors, name, ctx)
        out = restore(result)
        # The roles work in float32; a caller's narrower dtype (float16) can turn a finite
        # result into Inf on the way back, so there the result as returned is checked.
        narrows = not restore.holds_float32_range()
        if (not vouched_finite(result, ctx) or narrows) and \
                not result_finite(out if narrows else result, f"result {name!r}"):
            # A NaN/Inf on some rank: every rank's result is non-finite and the step is
            # skipped, so every rank takes back what it wrote for this tensor.
            self.memory.rollback(name)
            codec.rollback(name)
        wire_bytes = codec.wire_bytes(tensors, ctx)
        if self.auto_off is not None:
            self.auto_off.observe_compressed(name, time.perf_counter() - start,
                                             encode_seconds + self._decode_seconds,
                                             self.link_bytes_per_payload_byte(self.transport.size) * wire_bytes)
        self.stats.record(name, bytes_sent=wire_bytes, dense_bytes=4 * numel,
                          encode_seconds=encode_seconds, decode_seconds=self._decode_seconds)
        # With one rank (and on a broadcast's root) 'none' hands back the payload, which
        # is the caller's tensor itself: copied, so that the result, as on every other
        # rank, does not change when the caller edits the gradient in place (zero_grad
        # without set_to_none, gradient accumulation) or the other way round.
        return edge.unaliased(out, tensor, self.buffers, ("unaliased", name))

    # -- GRACE's Horovod-PyTorch flavour (its patched horovod.torch optimizer) --------
    def send_step(self, tensor, name):
        """GRACE's Horovod flavour splits the step into send_step and receive_step around
        an asynchronous exchange. Our transports are synchronous: the whole step runs
        here, and the handle is its result (``deepreduce.torch.horovod`` calls this in a
        fixed parameter order, so every rank exchanges the same tensor at once)."""
        return self.step(tensor, name), None

    def receive_step(self, handles, ctx):
        """The result of the exchange send_step ran (GRACE's Horovod flavour)."""
        return handles

    def _dense_step(self, tensor, name):
        """auto_off's path: the compensated tensor averaged by a plain allreduce. It is
        sent exactly, so the memory forgets the tensor (and costs nothing while the
        tensor stays dense), unless the sum is not finite."""
        compensated = self.memory.compensate(tensor, name)
        flat, restore = edge.to_core(compensated, what=f"gradient {name!r}")
        start = time.perf_counter()
        # Summed in a buffer the step keeps for the name, as the 'none' path's allreduce
        # does: a fresh copy per step took fresh pages each time (auto_off at 10 Gbit/s was
        # 14% slower per epoch than dense where it sent everything dense).
        summed = self.transport.allreduce(self.buffers.copy_of(("dense", name), flat), f"{name}/dense")
        self.auto_off.observe_dense(name, time.perf_counter() - start)
        # A non-finite sum (one rank's overflow is every rank's) is a step the loss scaler
        # skips: the memory keeps what it held, on every rank. Before, a rank whose own
        # tensor was finite dropped its residual although the step was skipped.
        if all_finite(summed):
            self.memory.forget(name)
        self.stats.record(name, bytes_sent=flat.nbytes, dense_bytes=flat.nbytes)
        return restore(summed / self.transport.size)

    # -- helpers for send_receive implementations -----------------------------------
    def decompress(self, tensors, ctx):
        """The codec's decompress, timed into this step's decode seconds."""
        start = time.perf_counter()
        out = self.codec().decompress(tensors, ctx)
        self._decode_seconds = getattr(self, "_decode_seconds", 0.0) + time.perf_counter() - start
        return out

    def decompress_aggregate(self, payloads, ctx, exchange=None):
        """Every rank's payload (one list per rank) decompressed, aggregated and averaged
        by the compressor's ``decompress_aggregate``, timed into this step's decode
        seconds. A compressor that is not one of our classes (duck-typed) gets the
        default: its decompress per rank, then its aggregate. ``exchange`` names where
        the payloads came from ("allgather of tensor 'w'"): a frame refused there is
        reported as ranks stepping tensors of different sizes where that is the cause
        (``_refuse_differing_sizes``)."""
        compressor = self.compressor
        combine = compressor.decompress_aggregate if is_compressor(compressor) else \
            partial(Compressor.decompress_aggregate, compressor)
        start = time.perf_counter()
        try:
            out = combine(payloads, ctx, self.world_size if compressor.average else 1)
        except FrameError as error:
            if exchange is None:
                raise
            _refuse_differing_sizes(payloads, exchange, error)
            # The frames are to blame: say whose, and of which tensor (the codec's message
            # named neither).
            raise FrameError(f"{exchange}: {_whose_payload(compressor, payloads, ctx)}{error}") from error
        self._decode_seconds = getattr(self, "_decode_seconds", 0.0) + time.perf_counter() - start
        return out

    def average(self, aggregated):
        """Divide by the world size when the compressor asks for an average (x / 1 is x:
        a world of one skips the division)."""
        size = self.world_size
        if not self.compressor.average or size == 1:
            return aggregated
        return aggregated / size


# Class -> whether it is a Compressor (``is_compressor``).
_IS_COMPRESSOR = {}


def is_compressor(obj):
    """``isinstance(obj, Compressor)``, its answer kept per class: the ABC's own check
    costs a Python call per step, where this is a dict lookup (a class does not change
    its bases)."""
    cls = type(obj)
    answer = _IS_COMPRESSOR.get(cls)
    if answer is None:
        answer = _IS_COMPRESSOR[cls] = isinstance(obj, Compressor)
    return answer


def encode(memory, compressor, tensor, name, restore=None):
    """A step's ``(tensors, ctx)``: compensate, compress, then update the memory, or the
    memory's ``fused_encode`` of the three where it has one for this compressor (residual
    memory with top-k: one C call where the three made about ninety Python calls).
    ``restore``: where ``tensor`` is a step's working tensor (``edge.to_working``), its
    restore, which lets the fused call read the tensor in place without crossing it."""
    fused_encode = getattr(memory, "fused_encode", None)
    fused = fused_encode(tensor, name, compressor, restore) if fused_encode is not None else None
    if fused is not None:
        return fused
    compensated = memory.compensate(tensor, name)
    tensors, ctx = compressor.compress(compensated, name)
    memory.update(compensated, name, compressor, tensors, ctx)
    return tensors, ctx


# The methods a compressor's decompress_aggregate stands in for (``Compressor._sums_as``).
_SUMMING = ("decompress", "aggregate")
# (class, owner, method names) -> whether the class's methods of those names are owner's.
_KEEPS_METHODS = {}


def keeps_methods(obj, owner, names):
    """Whether ``obj`` runs ``owner``'s own methods ``names``: its class overrides none
    of them (a GRACE-style subclass would) and none is set on the instance (a spy, a
    patch). A path that stands in for those methods together (``fused_encode``) may be
    taken only then. The class's answer is kept."""
    key = (type(obj), owner, names)
    answer = _KEEPS_METHODS.get(key)
    if answer is None:
        answer = _KEEPS_METHODS[key] = all(getattr(key[0], n, None) is getattr(owner, n) for n in names)
    instance = getattr(obj, "__dict__", None)
    return answer and (instance is None or instance.keys().isdisjoint(names))


def vouched_finite(result, ctx):
    """Whether the compressor's ``decompress_aggregate`` vouched for ``result`` (this very
    object) being finite, in ``ctx.finite_result``: its decoders said so from the entries
    they wrote (``Sparsifier``), so the step need not sweep the tensor for Inf/NaN. Read
    once and cleared, so that the ctx holds no result past the step."""
    vouched = getattr(ctx, "finite_result", None)
    if vouched is None:
        return False
    ctx.finite_result = None
    return vouched is result


# Compressor class -> whether its decoders are this package's (``decodes_numpy``).
_DECODES_NUMPY = {}
# The compressor's methods a communicator hands payloads to.
_DECODERS = ("decompress", "decompress_aggregate")


def decodes_numpy(compressor):
    """Whether ``compressor``'s decompress and decompress_aggregate (what a communicator
    hands payloads to) are this package's own, which take payloads of either kind: a
    communicator may then hand them NumPy arrays where it would turn them into the
    payload's kind first (a torch round trip costs a microsecond and a half, per rank's
    payload). Methods written elsewhere (a GRACE-style part with torch operations, or a
    function set on the instance) get the payload's kind."""
    cls = type(compressor)
    answer = _DECODES_NUMPY.get(cls)
    if answer is None:
        package = __name__.split(".")[0]
        answer = _DECODES_NUMPY[cls] = all(
            (getattr(getattr(cls, method, None), "__module__", None) or "").split(".")[0] == package
            for method in _DECODERS)
    instance = getattr(compressor, "__dict__", None)
    return answer and (instance is None or instance.keys().isdisjoint(_DECODERS))


def numpy_payload(payload, ctx):
    """``payload`` (of either kind) as a NumPy array, for decoders that read NumPy
    (``decodes_numpy``): the array the compressor made it from where its ctx names the
    pair (``ctx.sent``, this very payload), so a torch payload costs no crossing back
    (about 1.3 µs), else ``edge.as_numpy``."""
    if type(payload) is np.ndarray:
        return payload
    sent = getattr(ctx, "sent", None)
    return sent[1] if sent is not None and sent[0] is payload else edge.as_numpy(payload)


def _refuse_differing_sizes(per_rank, what, error):
    """After ``error`` (a FrameError) decoding ``per_rank`` (each rank's payloads): where
    sound frames disagree on their element counts, the ranks step different tensors under
    one name (another model, another order), and every rank refuses the others' frames
    alike. Raise CommunicationError saying so, as the allreduce does, rather than blame
    the frames; return where they agree (the frames are to blame)."""
    counts = [_payload_numel(payloads) for payloads in per_rank]
    if len({count for count in counts if count is not None}) > 1:
        raise CommunicationError(f"{what}: element counts differ across ranks {counts}; every rank must step "
                                 "the same tensors under each name") from error


def _whose_payload(compressor, per_rank, ctx):
    """"rank r's payload: " for the first rank whose payloads its own decompress refuses
    (the error path only: each is decoded again), "" where none is refused alone."""
    for rank, payloads in enumerate(per_rank):
        try:
            compressor.decompress(payloads, ctx)
        except FrameError:
            return f"rank {rank}'s payload: "
    return ""


def _payload_numel(payloads):
    """The element count a rank's payloads stand for: the count in the header of the
    first one's frame, or the size of a lone floating-point payload (the values as they
    are: none, fp16); None where neither can be told (a damaged frame, a payload of
    another form)."""
    if not payloads:
        return None
    try:
        array = edge.as_numpy(payloads[0])
        if array.dtype.kind == "f":
            return int(array.size) if len(payloads) == 1 else None
        return int(parse_frame(array, "payload").numel) if array.dtype == np.uint8 and array.ndim == 1 else None
    except (DeepReduceError, TypeError, ValueError):
        return None


def crossed(tensor, ctx, what):
    """``(flat, restore, finite)`` of the tensor a compress was given: kept in its ctx
    (``source``, ``flat``, ``restore``, ``finite``) by the compressors that keep them, so
    a memory's update neither crosses the edge nor sweeps for Inf/NaN a second time;
    else found here."""
    if getattr(ctx, "source", None) is tensor:
        return ctx.flat, ctx.restore, ctx.finite
    flat, restore = edge.to_core(tensor, what=what)
    return flat, restore, all_finite(flat)


def payload_nbytes(t):
    """Bytes of one payload tensor (NumPy array or torch tensor)."""
    nbytes = getattr(t, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    return t.numel() * t.element_size()
