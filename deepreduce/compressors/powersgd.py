"""PowerSGD (Vogels et al. 2019): a rank-r approximation P·Qᵀ of each gradient matrix by
one step of power iteration, warm-started from the previous Q.

The communication happens inside ``compress``: P and then Q are all-reduced and averaged
by the transport's true world size (GRACE's helper built it with world_size=1, so its
"average" was a sum). The payload list is therefore empty and the communicator's
allreduce has nothing left to do; vectors (1-D tensors) are sent dense instead.
Random starting matrices come from a private generator keyed by (name, step), equal on
every rank, never from a global RNG.

A non-finite gradient on any rank makes the all-reduced P and Q non-finite on every
rank, so the result is non-finite everywhere; such a Q is not kept (``q_memory`` stays as
it was before the step).
"""
import numpy as np

from .. import edge
from .._native import all_finite, check, f32, ffi, lib, name_key
from ..base import Compressor
from ..checks import dense_payload, integer, number
from ..state import Outputs
from ..transports.binding import TransportAtFirstUse


def orthonormalize(matrix, eps=1e-8):
    """Gram-Schmidt on the columns, in place; a zero column stays zero (no NaN)."""
    for i in range(matrix.shape[1]):
        col = matrix[:, i]
        norm = float(np.sqrt(col @ col))
        col /= max(norm, eps)
        if i + 1 < matrix.shape[1]:
            rest = matrix[:, i + 1:]
            rest -= np.outer(col, col @ rest)
    return matrix


def orthogonalize(matrix):
    """GRACE's helper: Gram-Schmidt on the columns of a 2-D torch tensor or NumPy array,
    in place (a zero column stays zero instead of turning NaN)."""
    if len(matrix.shape) != 2:
        raise ValueError(f"orthogonalize expects a 2-D matrix, got shape {tuple(matrix.shape)}")
    view = edge.writable_view(matrix)
    if view is not None:
        orthonormalize(view.reshape(matrix.shape))
        return
    flat, restore = edge.to_core(matrix, what="matrix")  # another dtype or device: a copy
    orthonormalize(flat.reshape(restore.shape))
    if edge.is_torch(matrix):
        matrix.copy_(restore(flat))
    else:
        matrix[...] = flat.reshape(restore.shape)


class PowerSGDCtx:
    """One compress's factors P and Q (NumPy float32, rows x r and cols x r), or
    ``dense`` for a vector sent as it is. ``finite_result``: the decompressed result, when
    the product that wrote it saw only finite values (``base.vouched_finite``)."""
    __slots__ = ("p", "q", "restore", "dense", "name", "finite_result")

    def __init__(self, p, q, restore, dense=False, name=None):
        self.p, self.q, self.restore, self.dense, self.name = p, q, restore, dense, name
        self.finite_result = None

    def product(self, minuend, out):
        """P·Qᵀ (``minuend`` None) or ``minuend`` − P·Qᵀ into ``out`` (flat float32) in one
        pass; whether every value written is finite."""
        p = np.ascontiguousarray(self.p, dtype=np.float32)
        qt = np.ascontiguousarray(self.q.T, dtype=np.float32)  # rank 1: a view, no copy
        rows, rank = p.shape
        status = lib.dr_lowrank_product(f32(p), f32(qt), rows, qt.shape[1], rank,
                                        ffi.NULL if minuend is None else f32(minuend), f32(out))
        check(min(status, 0), "powersgd product")
        return status == 1


class PowerSGDCompressor(TransportAtFirstUse, Compressor):
    """GRACE's signature and defaults: ``PowerSGDCompressor(rank=1, use_memory=False,
    world_size=...)``. ``use_memory`` keeps Q between steps (the helper turns it on with the
    powersgd memory). ``world_size`` is the transport's when left None; a value that
    disagrees with the process group is refused (CommunicationError) at the first step
    rather than used as the divisor (GRACE's helper left it 1 and so summed where it meant
    to average).
    ``q_memory[name]`` holds Q in the caller's kind."""

    needs_shapes = True

    def __init__(self, rank=1, use_memory=False, world_size=None, transport=None, momentum_factor=None):
        """``momentum_factor``: GRACE TensorFlow's PowerSGD adds a momentum of its own to
        the decompressed tensor; ours leaves momentum to the optimizer, so the value is
        checked and not used (docs/tensorflow.md)."""
        super().__init__()
        if momentum_factor is not None:
            number(momentum_factor, "momentum_factor", 0.0, 1.0)
        self.rank = integer(rank, "compress_rank", 1, 2 ** 31 - 1)
        self.use_memory = use_memory
        self.q_memory = {}
        self._steps = {}
        self.outputs = Outputs()  # decompress's results, reused per name once released
        self._bind_later(transport, world_size)

    @property
    def world_size(self):
        return self._world_size if self._world_size is not None else self.transport.size

    @world_size.setter
    def world_size(self, value):
        self._world_size = value

    @classmethod
    def from_params(cls, params):
        # allgather and alltoall would exchange the payload, which is empty (P and Q are
        # all-reduced here) or, for alltoall's flat chunks, the values sent dense.
        if params["communicator"] not in ("allreduce", "broadcast"):
            raise ValueError("compressor='powersgd' all-reduces its factors P and Q itself; leave "
                             f"communicator='allreduce' (the default), not {params['communicator']!r}")
        return cls(params["compress_rank"], use_memory=params["memory"] == "powersgd",
                   transport=params["transport"], world_size=params["world_size"])

    def _allreduce_mean(self, matrix, name):
        size = self.transport.size  # binding it checks world_size against the group
        flat = self.transport.allreduce(np.ascontiguousarray(matrix).reshape(-1), name)
        return (flat / size).reshape(matrix.shape)

    def _start_q(self, name, m, r):
        step = self._steps.get(name, 0)
        self._steps[name] = step + 1
        if self.use_memory and name in self.q_memory:
            kept, _ = edge.to_core(self.q_memory[name], what=f"Q of {name!r}")
            if kept.size == m * r:
                return kept.reshape(m, r)
        generator = np.random.Generator(np.random.Philox(key=name_key(name, step)))
        return orthonormalize(generator.standard_normal((m, r)).astype(np.float32))

    def compress(self, tensor, name):
        shaped, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        if len(restore.shape) <= 1 or shaped.size == 0:  # vectors and empty tensors go dense
            return [restore.wrap(shaped)], PowerSGDCtx(None, None, restore, dense=True)
        n = restore.shape[0]
        matrix = shaped.reshape(n, -1)
        m = matrix.shape[1]
        r = min(n, m, self.rank)
        q = self._start_q(name, m, r)
        with np.errstate(invalid="ignore", over="ignore"):  # a non-finite gradient stays non-finite
            p = orthonormalize(self._allreduce_mean(matrix @ q, f"{name}/P"))
            q = self._allreduce_mean(matrix.T @ p, f"{name}/Q")
        if self.use_memory and all_finite(q.reshape(-1)):  # equal on every rank: all keep it or none
            self.q_memory[name] = restore.wrap(q)
        return [], PowerSGDCtx(p, q, restore, name=name)

    def decompress(self, tensors, ctx):
        if ctx.dense:
            tensor, = tensors
            return ctx.restore(dense_payload(tensor, ctx.restore.numel, "powersgd dense payload"))
        out = self.outputs.take(ctx.name, ctx.p.shape[0] * ctx.q.shape[0])
        finite = ctx.product(None, out)
        result = ctx.restore(out)
        ctx.finite_result = result if finite else None
        return result

    def lost(self, flat, tensors, ctx, out):
        # The residual flat − P·Qᵀ in one pass, without the product as a tensor of its
        # own. A vector went dense (nothing lost), and a subclass that decompresses its
        # own way keeps the default.
        if ctx.dense or type(self).decompress is not PowerSGDCompressor.decompress:
            return super().lost(flat, tensors, ctx, out)
        ctx.product(flat, out)

    def wire_bytes(self, tensors, ctx):
        if ctx.dense:
            return super().wire_bytes(tensors, ctx)
        return ctx.p.nbytes + ctx.q.nbytes
