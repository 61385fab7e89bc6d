"""``horovod.torch``'s call shapes, as GRACE's patched Horovod has them, over our own
transports (torch.distributed or MPI): ``import deepreduce.torch.horovod as hvd`` in
place of ``import horovod.torch as hvd``, and GRACE's Horovod-PyTorch scripts run.

``hvd.DistributedOptimizer(optimizer, grc, named_parameters=...)`` averages every
gradient with ``grc`` (GRACE's communicator: compensate, compress, exchange, decompress)
before the wrapped optimizer steps; without ``grc`` it averages dense gradients, as
Horovod does. What differs from real Horovod, and why, is in docs/tensorflow.md.
"""
import contextlib
import pickle

import numpy as np
import torch

from ..horovod_common import Adasum, Average, Compression, Sum, check_allgather_layout, collective_name, reduce_op, refuse_unoffered
from ..world import init, is_initialized, local_rank, local_size, rank, shutdown, size, current

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size",
           "Average", "Sum", "Adasum", "Compression", "allreduce", "allreduce_", "allgather", "broadcast",
           "broadcast_", "broadcast_object", "allgather_object", "broadcast_parameters",
           "broadcast_optimizer_state", "DistributedOptimizer"]


# -- collectives: differentiable, as Horovod's (each is an autograd function whose backward
# runs the adjoint collective, unnamed, so every rank's backward pass tags them alike) ------
def allreduce(tensor, average=None, name=None, op=None):
    """The sum (op=Sum) or mean (the default) of ``tensor`` over ranks, as a new tensor;
    its gradient is reduced the same way."""
    op = reduce_op(op, average)
    return _Allreduce.apply(_tensor(tensor, "allreduce"), collective_name(name, "allreduce"), op)


def allreduce_(tensor, average=None, name=None, op=None):
    """``allreduce`` written into ``tensor``."""
    op = reduce_op(op, average)
    with torch.no_grad():
        return tensor.copy_(_allreduce(_tensor(tensor, "allreduce_"), collective_name(name, "allreduce"), op))


def allgather(tensor, name=None):
    """Every rank's ``tensor`` concatenated along the first dimension, in rank order; the
    gradient of a rank's rows is the sum of the ranks' gradients there."""
    return _Allgather.apply(_tensor(tensor, "allgather"), collective_name(name, "allgather"))


def broadcast(tensor, root_rank, name=None):
    """Root's ``tensor`` on every rank, as a new tensor; root's gradient is the sum of the
    ranks' gradients, the others' zero."""
    return _Broadcast.apply(_tensor(tensor, "broadcast"), root_rank, collective_name(name, "broadcast"))


def broadcast_(tensor, root_rank, name=None):
    """Root's ``tensor`` written into ``tensor`` on every rank."""
    with torch.no_grad():
        return tensor.copy_(_broadcast(_tensor(tensor, "broadcast_"), root_rank, collective_name(name, "broadcast")))


def broadcast_object(obj, root_rank=0, name=None):
    """Root's picklable ``obj`` on every rank (pickled: the ranks must trust each other).
    If root cannot pickle it, every rank raises."""
    name = collective_name(name, "broadcast_object")
    data = _pickled(obj) if rank() == root_rank else b""
    return pickle.loads(_broadcast_bytes(data, root_rank, name))


def allgather_object(obj, name=None):
    """Every rank's picklable ``obj``, in rank order (pickled: the ranks must trust each
    other). If a rank cannot pickle its object, every rank raises."""
    name = collective_name(name, "allgather_object")
    data = _pickled(obj)
    parts = current().transport.allgather(np.frombuffer(data or b"", dtype=np.uint8), name)
    unpicklable = [r for r, part in enumerate(parts) if part.size == 0]  # a pickle is never empty
    if unpicklable:
        raise TypeError(f"hvd.allgather_object: the objects of ranks {unpicklable} cannot be pickled")
    return [pickle.loads(part.tobytes()) for part in parts]


def _pickled(obj):
    """``obj`` pickled, or None where it cannot be (the collective then tells every rank,
    rather than this one raising alone while the others wait)."""
    try:
        return pickle.dumps(obj)
    except Exception:  # noqa: BLE001 - pickle raises many kinds; every rank is told below
        return None


def _tensor(tensor, what):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"hvd.{what}: tensor must be a torch.Tensor, got {type(tensor).__name__}")
    return tensor


def _allreduce(tensor, name, op):
    world = current()
    # One private CPU copy (the transport sums into it), divided in place.
    summed = world.transport.allreduce(tensor.detach().to("cpu", copy=True).contiguous(), name)
    if op == Average and world.size > 1:
        if summed.dtype == torch.bool:
            raise TypeError(f"hvd.allreduce of {name!r}: a bool tensor has no average; pass op=hvd.Sum")
        exact = summed.is_floating_point() or summed.is_complex()
        summed = summed.div_(world.size) if exact else summed.floor_divide_(world.size)
    return summed.to(tensor.device)


def _allgather(tensor, name):
    transport = current().transport
    check_allgather_layout(transport, name, tensor.dtype, tuple(tensor.shape))
    parts = transport.allgather(tensor.detach().cpu().contiguous().reshape(-1), name)
    rows = [p.reshape(-1, *tensor.shape[1:]) if tensor.dim() else p for p in parts]
    return torch.cat(rows).to(tensor.device)


def _broadcast(tensor, root_rank, name):
    data = current().transport.broadcast(tensor.detach().cpu().contiguous().reshape(-1), root_rank, name)
    return data.reshape(tensor.shape).to(tensor.device)


class _Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op):
        ctx.op = op
        return _allreduce(tensor, name, op)

    @staticmethod
    def backward(ctx, grad):
        return _Allreduce.apply(grad, collective_name(None, "allreduce"), ctx.op), None, None


def _summed_gradient(grad):
    """The ranks' ``grad`` summed, through the autograd function: differentiable again."""
    return _Allreduce.apply(grad, collective_name(None, "allreduce"), Sum)


class _Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name):
        ctx.shape = tensor.shape
        return _allgather(tensor, name)

    @staticmethod
    def backward(ctx, grad):
        rows = ctx.shape[0] if len(ctx.shape) else 1
        every = _allgather(torch.tensor([rows]), collective_name(None, "allgather"))
        start = int(every[:rank()].sum())
        return _summed_gradient(grad).narrow(0, start, rows).reshape(ctx.shape), None


class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name):
        ctx.root_rank = root_rank
        return _broadcast(tensor, root_rank, name)

    @staticmethod
    def backward(ctx, grad):
        summed = _summed_gradient(grad)
        return (summed if rank() == ctx.root_rank else summed * 0), None, None


def _broadcast_bytes(data, root_rank, name):
    """Root's ``data`` (bytes) on every rank: its length, then its bytes. Root's ``data``
    None (an object it could not pickle) makes every rank raise."""
    stated = -1 if data is None else len(data)
    length = int(_broadcast(torch.tensor([stated], dtype=torch.int64), root_rank, f"{name}.length").item())
    if length < 0:
        raise TypeError(f"{name}: rank {root_rank}'s object cannot be pickled")
    if not length:
        return b""
    buf = bytearray(data) if rank() == root_rank else bytearray(length)
    return bytes(_broadcast(torch.frombuffer(buf, dtype=torch.uint8), root_rank, name).numpy())


# -- a model's and an optimizer's state ----------------------------------------------------
def broadcast_parameters(params, root_rank):
    """Root's values, in place, of a ``state_dict()``, of ``named_parameters()``, or of a
    list of tensors (named by their place in it), as Horovod takes them."""
    if isinstance(params, dict):
        items = sorted(params.items())
    elif isinstance(params, torch.Tensor) or not hasattr(params, "__iter__"):
        raise TypeError(f"broadcast_parameters: params must be a state_dict(), named_parameters() or a list of "
                        f"tensors, got {type(params).__name__}")
    else:
        items = [item if isinstance(item, tuple) else (i, item) for i, item in enumerate(params)]
    for item in items:
        if len(item) != 2 or not isinstance(item[1], torch.Tensor):
            raise TypeError(f"broadcast_parameters: each entry must be a tensor or a (name, tensor) pair, got "
                            f"{item!r:.80}")
        key, tensor = item
        broadcast_(tensor, root_rank, name=f"broadcast_parameters.{key}")


def broadcast_optimizer_state(optimizer, root_rank):
    """Root's hyperparameters and per-parameter state (momentum buffers, Adam's moments,
    step counts, LBFGS's history), in place. Every rank first checks that the ranks'
    optimizers have the same parameter groups. Then root's layout travels, pickled, with
    every value that is not a tensor (numbers, flags, Adam's betas, lists: the ranks must
    trust each other), and every rank takes it: a rank resumed from no checkpoint (empty
    state) gets root's, so no rank waits on a broadcast the others skip. Tensors follow,
    one broadcast each, into each rank's own tensors where they fit."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"broadcast_optimizer_state: optimizer must be a torch.optim.Optimizer, got "
                        f"{type(optimizer).__name__}")
    counts = [len(group["params"]) for group in optimizer.param_groups]
    every = allgather_object(counts, name="optimizer.groups")
    if any(theirs != counts for theirs in every):
        raise ValueError(f"broadcast_optimizer_state: the ranks' optimizers differ in their parameter groups "
                         f"(parameters per group, by rank: {every}); build the same optimizer on every rank")
    layout = _optimizer_layout(optimizer) if rank() == root_rank else None
    layout = pickle.loads(_broadcast_bytes(_pickled(layout), root_rank,
                                           "optimizer.layout"))
    kept = {(g, i, key) for g, i, key, _ in layout["state"]}
    for g, group in enumerate(optimizer.param_groups):  # state root does not have goes
        for i, p in enumerate(group["params"]):
            for key in [k for k in optimizer.state.get(p, {}) if (g, i, k) not in kept]:
                del optimizer.state[p][key]
    for g, key, code in layout["groups"]:
        _take(optimizer.param_groups[g], key, code, root_rank, f"optimizer.group{g}.{key}", None)
    for g, i, key, code in layout["state"]:
        p = optimizer.param_groups[g]["params"][i]
        _take(optimizer.state[p], key, code, root_rank, f"optimizer.group{g}.param{i}.{key}", p.device)


def _optimizer_layout(optimizer):
    """{"groups": [(group, key, code)], "state": [(group, param, key, code)]} of every
    hyperparameter and state entry this rank holds (``_code``)."""
    groups, state = [], []
    for g, group in enumerate(optimizer.param_groups):
        groups += [(g, key, _code(value)) for key, value in sorted(group.items()) if key != "params"]
        for i, p in enumerate(group["params"]):
            state += [(g, i, key, _code(value)) for key, value in sorted(optimizer.state.get(p, {}).items())]
    return {"groups": groups, "state": state}


def _code(value):
    """How ``value`` travels: ("tensor", shape, dtype), broadcast after the layout, or
    ("value", value), in the layout itself."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype)
    return ("value", value)


def _take(holder, key, code, root_rank, name, device):
    """Set ``holder[key]`` to root's value, as ``_code`` sent it (tensors in a value, such
    as LBFGS's lists, moved to ``device``, the parameter's)."""
    if code[0] == "value":
        holder[key] = _moved(code[1], device)
        return
    shape, dtype = code[1], code[2]
    mine = holder.get(key)
    if not isinstance(mine, torch.Tensor) or tuple(mine.shape) != shape or mine.dtype != dtype:
        holder[key] = mine = torch.zeros(shape, dtype=dtype, device=device)
    broadcast_(mine, root_rank, name=name)


def _moved(value, device):
    if device is None:
        return value
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(v, device) for v in value)
    return value


class _DistributedOptimizer:
    """Placed before the user's optimizer class in a subclass made for it: ``step()``
    first averages every gradient over the ranks (``synchronize``)."""

    def __init__(self, optimizer, named_parameters, grace, op, sparse_as_dense, predivide):
        super().__init__(optimizer.param_groups)
        # The class's defaults would be the constructor's (SGD's lr 0.001): a group added
        # later takes the wrapped optimizer's, as it would have; and its state so far.
        self.defaults = dict(optimizer.defaults)
        self.state.update(optimizer.state)
        self._grace = grace
        self._op = op
        self._sparse_as_dense = sparse_as_dense
        self._predivide = predivide
        self._names = _parameter_names(self.param_groups, named_parameters)
        self._should_synchronize = True  # False inside skip_synchronize()

    def add_param_group(self, param_group):
        """The optimizer's, then a name for each new parameter by its place among the
        optimizer's (the same on every rank), as Horovod gives parameters it was not
        told the names of (a head added, layers unfrozen)."""
        super().add_param_group(param_group)
        names = getattr(self, "_names", None)  # None while __init__ adds the first groups
        if names is not None:
            for i, p in enumerate(p for group in self.param_groups for p in group["params"]):
                names.setdefault(p, f"allreduce.noname.{i}")

    def synchronize(self):
        """Average every gradient now, parameter by parameter in the optimizer's order (the
        same on every rank). A parameter without a gradient contributes zeros, so every
        rank exchanges the same tensors."""
        for group in self.param_groups:
            for p in group["params"]:
                if not p.requires_grad:
                    continue
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                if p.grad.is_sparse and self._sparse_as_dense:
                    p.grad = p.grad.to_dense()
                name = self._names[p]
                if p.grad.is_sparse:
                    # An Embedding(sparse=True)'s: reduced dense and handed back sparse
                    # (Horovod gathers the rows instead: the same sum).
                    p.grad = _touched_only(self._average(p.grad.to_dense(), name), p.grad, name)
                    continue
                averaged = self._average(p.grad, name)
                with torch.no_grad():
                    p.grad.copy_(averaged)

    def _average(self, grad, name):
        if self._grace is not None:
            handle, ctx = self._grace.send_step(grad, name)
            return self._grace.receive_step(handle, ctx)
        if self._predivide == 1.0:
            return _allreduce(grad, name, self._op)
        # Horovod's split of the average: 1/f before the sum, f/size after it.
        return _allreduce(grad * (1.0 / self._predivide), name, Sum).mul_(self._predivide / size())

    @contextlib.contextmanager
    def skip_synchronize(self):
        """For ``synchronize(); clip; with skip_synchronize(): step()``, as Horovod."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            self.synchronize()
        return super().step(closure)


def _touched_only(dense, grad, name):
    """``dense`` (the average of the ranks' sparse ``grad``) as a sparse tensor of
    ``grad``'s sparse dimensions, holding the rows (slices) any rank's gradient touched,
    zeros in them included: SparseAdam updates exactly those rows, and a gradient made
    sparse by its values (``to_sparse``) dropped the zeros inside them."""
    dims = grad.sparse_dim()
    touched = torch.zeros(grad.shape[:dims], dtype=torch.int32)
    touched[tuple(grad.coalesce().indices().cpu())] = 1
    index = _allreduce(touched, f"{name}.rows", Sum).nonzero().t().to(dense.device)
    return torch.sparse_coo_tensor(index, dense[tuple(index)], dense.shape, is_coalesced=True, check_invariants=True)


def _parameter_names(param_groups, named_parameters):
    """{parameter: name}; Horovod's checks: names unique, every parameter named."""
    if named_parameters is None:
        params = [p for group in param_groups for p in group["params"]]
        return {p: f"allreduce.noname.{i}" for i, p in enumerate(params)}
    named = list(named_parameters)
    if any(not (isinstance(item, tuple) and len(item) == 2) for item in named):
        raise ValueError("named_parameters should be a sequence of (name, parameter) tuples, "
                         "usually produced by model.named_parameters()")
    names = [name for name, _ in named]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"parameter names in named_parameters must be unique; duplicates: {', '.join(duplicates)}")
    by_param = {p: name for name, p in named}
    unnamed = [p for group in param_groups for p in group["params"] if p not in by_param]
    if unnamed:
        raise ValueError(f"named_parameters was given but {len(unnamed)} of the optimizer's parameters are "
                         "not in it: pass model.named_parameters() of the model the optimizer trains")
    return by_param


def DistributedOptimizer(optimizer, grace=None, named_parameters=None, compression=None,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         sparse_as_dense=False):
    """GRACE's ``hvd.DistributedOptimizer(optimizer, grace=grc, named_parameters=...)``:
    an optimizer of the same class over the same parameter groups whose ``step()``
    first averages the gradients, through ``grace`` when given, else dense.
    ``gradient_predivide_factor`` f (dense average only): gradients are divided by f
    before the sum and multiplied by f/size after, as Horovod's. ``sparse_as_dense``:
    sparse gradients become dense ones (else they are averaged dense and handed back
    sparse)."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"DistributedOptimizer wraps a torch.optim.Optimizer, got {type(optimizer).__name__}")
    if grace is not None and not (callable(getattr(grace, "send_step", None))
                                  and callable(getattr(grace, "receive_step", None))):
        raise TypeError(f"DistributedOptimizer: grace must be a communicator, grace_from_params(params), or None "
                        f"for the dense average; got {type(grace).__name__}")
    refuse_unoffered(compression, backward_passes_per_step)
    op = reduce_op(op)
    try:
        predivide = float(gradient_predivide_factor)
    except (TypeError, ValueError):
        predivide = float("nan")
    if not (np.isfinite(predivide) and predivide > 0):
        raise ValueError(f"gradient_predivide_factor must be a finite number > 0, got {gradient_predivide_factor!r}")
    if predivide != 1.0 and (op != Average or grace is not None):
        raise ValueError("gradient_predivide_factor other than 1.0 splits the dense average (op=hvd.Average, "
                         "no grace); " + ("a GRACE communicator averages in its own way" if grace is not None
                                          else f"got op={op!r}"))
    current()  # fail here, not at the first step, when hvd.init() was not called
    cls = type(type(optimizer).__name__, (_DistributedOptimizer, type(optimizer)), {})
    return cls(optimizer, named_parameters, grace, op, bool(sparse_as_dense), predivide)
