"""``horovod.torch``'s call shapes, as GRACE's patched Horovod has them, over our own
transports (torch.distributed or MPI): ``import deepreduce.torch.horovod as hvd`` in
place of ``import horovod.torch as hvd``, and GRACE's Horovod-PyTorch scripts run.

``hvd.DistributedOptimizer(optimizer, grc, named_parameters=...)`` averages every
gradient with ``grc`` (GRACE's communicator: compensate, compress, exchange, decompress)
before the wrapped optimizer steps; without ``grc`` it averages dense gradients, as
Horovod does. What differs from real Horovod, and why, is in docs/tensorflow.md.
"""
import contextlib
import json

import torch

from ..horovod_common import Adasum, Average, Compression, Sum, check_allgather_layout, collective_name, reduce_op, refuse_unoffered
from ..world import init, is_initialized, local_rank, local_size, rank, shutdown, size, current

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size",
           "Average", "Sum", "Adasum", "Compression", "allreduce", "allgather", "broadcast", "broadcast_",
           "broadcast_parameters", "broadcast_optimizer_state", "DistributedOptimizer"]

def allreduce(tensor, average=None, name=None, op=None):
    """The sum (op=Sum) or mean (the default) of ``tensor`` over ranks, as a new tensor."""
    op = reduce_op(op, average)
    world = current()
    # One private CPU copy (the transport sums into it), divided in place.
    summed = world.transport.allreduce(tensor.detach().to("cpu", copy=True).contiguous(), collective_name(name, "allreduce"))
    if op == Average and world.size > 1:
        summed = summed.div_(world.size) if summed.is_floating_point() else summed.floor_divide_(world.size)
    return summed.to(tensor.device)


def allgather(tensor, name=None):
    """Every rank's ``tensor`` concatenated along the first dimension, in rank order."""
    name, transport = collective_name(name, "allgather"), current().transport
    check_allgather_layout(transport, name, tensor.dtype, tuple(tensor.shape))
    parts = transport.allgather(tensor.detach().cpu().contiguous().reshape(-1), name)
    rows = [p.reshape(-1, *tensor.shape[1:]) if tensor.dim() else p for p in parts]
    return torch.cat(rows).to(tensor.device)


def broadcast(tensor, root_rank, name=None):
    """Root's ``tensor`` on every rank, as a new tensor."""
    data = current().transport.broadcast(tensor.detach().cpu().contiguous().reshape(-1), root_rank,
                                         collective_name(name, "broadcast"))
    return data.reshape(tensor.shape).to(tensor.device)


def broadcast_(tensor, root_rank, name=None):
    """Root's ``tensor`` written into ``tensor`` on every rank."""
    with torch.no_grad():
        tensor.copy_(broadcast(tensor, root_rank, name))
    return tensor


def broadcast_parameters(params, root_rank):
    """Root's values of a ``state_dict()`` or of ``named_parameters()``, in place."""
    items = sorted(params.items()) if isinstance(params, dict) else list(params)
    for key, tensor in items:
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"broadcast_parameters: {key!r} is a {type(tensor).__name__}, not a tensor")
        broadcast_(tensor, root_rank, name=f"broadcast_parameters.{key}")


def broadcast_optimizer_state(optimizer, root_rank):
    """Root's hyperparameters and per-parameter state (momentum buffers, Adam's moments,
    step counts), in place. Root's layout of that state travels first and every rank takes
    it: a rank resumed from no checkpoint (empty state) gets root's, so no rank waits on a
    broadcast the others skip."""
    for g, group in enumerate(optimizer.param_groups):
        for key in sorted(k for k, v in group.items() if k != "params" and _is_number(v)):
            group[key] = _broadcast_number(group[key], root_rank, f"optimizer.group{g}.{key}")
    layout = _state_layout(optimizer) if rank() == root_rank else None
    layout = _broadcast_json(layout, root_rank, "optimizer.state-layout")
    kept = {(g, i, key) for g, i, key, _ in layout}
    for g, group in enumerate(optimizer.param_groups):  # state root does not have goes
        for i, p in enumerate(group["params"]):
            for key in [k for k in optimizer.state.get(p, {}) if (g, i, k) not in kept]:
                del optimizer.state[p][key]
    for g, i, key, kind in layout:
        p = optimizer.param_groups[g]["params"][i]
        state = optimizer.state[p]
        name = f"optimizer.group{g}.param{i}.{key}"
        if kind == "number":
            state[key] = _broadcast_number(state.get(key, 0.0), root_rank, name)
            continue
        shape, dtype = kind
        mine = state.get(key)
        if not isinstance(mine, torch.Tensor) or list(mine.shape) != shape or str(mine.dtype) != dtype:
            state[key] = mine = torch.zeros(shape, dtype=getattr(torch, dtype.split(".")[-1]), device=p.device)
        broadcast_(mine, root_rank, name=name)


def _state_layout(optimizer):
    """[(group, param, key, "number" or [shape, dtype])] of the state this rank holds."""
    layout = []
    for g, group in enumerate(optimizer.param_groups):
        for i, p in enumerate(group["params"]):
            for key, value in sorted(optimizer.state.get(p, {}).items()):
                if isinstance(value, torch.Tensor):
                    layout.append((g, i, key, [list(value.shape), str(value.dtype)]))
                elif _is_number(value):
                    layout.append((g, i, key, "number"))
    return layout


def _broadcast_json(value, root_rank, name):
    """Root's JSON-able ``value`` on every rank: its length, then its bytes."""
    data = json.dumps(value).encode() if value is not None else b""
    length = int(broadcast(torch.tensor([len(data)], dtype=torch.int64), root_rank, f"{name}.length").item())
    payload = torch.frombuffer(bytearray(data.ljust(length, b"\0")), dtype=torch.uint8) if length else \
        torch.zeros(0, dtype=torch.uint8)
    return json.loads(bytes(broadcast(payload, root_rank, name).numpy()).decode()) if length else []


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _broadcast_number(value, root_rank, name):
    out = broadcast(torch.tensor([float(value)], dtype=torch.float64), root_rank, name).item()
    return type(value)(out)


class _DistributedOptimizer:
    """Placed before the user's optimizer class in a subclass made for it: ``step()``
    first averages every gradient over the ranks (``synchronize``)."""

    def __init__(self, params, named_parameters, grace, op):
        super().__init__(params)
        self._grace = grace
        self._op = op
        self._names = _parameter_names(self.param_groups, named_parameters)
        self._should_synchronize = True  # False inside skip_synchronize()

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
                name = self._names[p]
                if self._grace is not None:
                    handle, ctx = self._grace.send_step(p.grad, name)
                    averaged = self._grace.receive_step(handle, ctx)
                elif p.grad.is_sparse:
                    # An Embedding(sparse=True)'s: reduced dense and handed back sparse, with
                    # the rows any rank touched (Horovod gathers the rows instead: the same sum).
                    p.grad = allreduce(p.grad.to_dense(), name=name, op=self._op).to_sparse()
                    continue
                else:
                    averaged = allreduce(p.grad, name=name, op=self._op)
                with torch.no_grad():
                    p.grad.copy_(averaged)

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
                         backward_passes_per_step=1, op=Average):
    """GRACE's ``hvd.DistributedOptimizer(optimizer, grace=grc, named_parameters=...)``:
    an optimizer of the same class over the same parameter groups whose ``step()``
    first averages the gradients, through ``grace`` when given, else dense."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"DistributedOptimizer wraps a torch.optim.Optimizer, got {type(optimizer).__name__}")
    refuse_unoffered(compression, backward_passes_per_step)
    op = reduce_op(op)
    current()  # fail here, not at the first step, when hvd.init() was not called
    cls = type(type(optimizer).__name__, (_DistributedOptimizer, type(optimizer)), {})
    return cls(optimizer.param_groups, named_parameters, grace, op)
