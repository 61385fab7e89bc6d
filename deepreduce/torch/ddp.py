"""A DDP communication hook that sends gradient buckets through any deepreduce params
dict, in the style of torch's ``powerSGD_hook``:

    state = DeepReduceHookState({'compressor': 'topk', 'memory': 'residual',
                                 'communicator': 'allgather', 'compress_ratio': 0.01})
    model.register_comm_hook(state, ddp_hook)

State and hook:
- DDP hands the hook one *bucket* at a time: a flat buffer holding the gradients of
  several parameters. The bucket's index is its stable name for the memory (residuals
  are kept per bucket). A compressor that works on shapes (PowerSGD factors each
  matrix; ``needs_shapes``) would see one long vector, which it sends dense: its
  buckets are exchanged a parameter's gradient at a time, each with its own shape and
  name (``ddp.bucket3.1``: the bucket's second), as torch's ``powerSGD_hook`` takes them.
- DDP builds provisional buckets for the first iteration and rebuilds them, in gradient
  ready order, at the start of the second. Per-bucket state (residuals, momenta) made in
  iteration 0 would then belong to buckets of another size. So iteration 0 is a plain
  averaging allreduce, and compression starts once the buckets are final
  (``start_iter``, default 1). Hence the hook is safe across the rebuild.
- Overlap (the default): the hook hands the bucket to one worker thread and returns a
  pending Future at once, so the compression and the exchange of bucket i run while the
  backward pass computes the gradients of bucket i+1; DDP waits for every Future before
  the optimizer step. One thread, fed in the order DDP calls the hook (the same on every
  rank), keeps the collectives in the same order everywhere, so the results are the
  synchronous hook's exactly. The hook of an iteration's last bucket waits for the
  worker: DDP's own collectives (find_unused_parameters' allreduce of the parameters
  used) come right after it, and must find the exchanges done on every rank.
  ``overlap=False`` runs each exchange inside the hook.
- A process group (DDP's ``process_group``, given to the state as to torch's
  ``PowerSGDState``): the compressed exchange runs within it, as DDP's allreduce does.
- Checkpoints: the state pickles (``torch.save(state, f)``), as torch's ``PowerSGDState``
  does, without its process group (the default group on loading: the communicator's
  transport pickles as 'torch') and its worker thread (made again). A model rebuilt
  from a checkpoint gets provisional buckets again, so the loaded state's first
  iteration is a plain averaging allreduce too, and compression resumes on the final
  buckets with the memory's state as it was saved.
"""
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.distributed as dist

from ..checks import flag, integer
from ..transports.torch_dist import TorchTransport
from ..wrappers import deepreduce_from_params


class DeepReduceHookState:
    """What the hook keeps between calls: the communicator built from ``params`` (by
    ``deepreduce_from_params``: DeepReduce's keys wrap the compressor) and the
    iteration counter that tells provisional buckets from final ones."""

    def __init__(self, params, process_group=None, start_iter=1, overlap=True):
        start_iter = integer(start_iter, "start_iter", 0, 2**63 - 1)
        if start_iter < 1:
            raise ValueError("start_iter must be >= 1: DDP's first-iteration buckets are provisional")
        overlap = flag(overlap, "overlap")
        params = dict(params)
        if process_group is not None:
            # The buckets are averaged across DDP's group, so the communicator (and any
            # part with collectives of its own: powersgd, dgc's clipping) exchanges there.
            if params.get("transport") not in (None, "torch"):
                raise ValueError(f"params' transport {params['transport']!r} and process_group both say where "
                                 "the buckets go: pass process_group alone (DDP's group)")
            params["transport"] = TorchTransport(process_group)
        # deepreduce_from_params: a 'deepreduce' key wraps the compressor in its codec, as the
        # train command and the federated mode do (grace_from_params left it out unsaid).
        self.grc = deepreduce_from_params(params)
        self.process_group = process_group
        self.start_iter = start_iter
        self.iteration = 0
        # Loaded from a checkpoint: the iteration it was saved at, which runs on the
        # rebuilt model's provisional buckets (None: not loaded).
        self.resumed_at = None
        # One worker: buckets are exchanged one at a time, in the order DDP hands them over.
        self.worker = _worker() if overlap else None

    def __getstate__(self):
        # As torch's PowerSGDState: no process group (a live handle) and no thread.
        return dict(self.__dict__, process_group=None, worker=self.worker is not None)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.worker = _worker() if state["worker"] else None
        self.resumed_at = self.iteration

    def advance(self, bucket):
        # The last bucket of an iteration closes it.
        if bucket.is_last():
            self.iteration += 1


def _worker():
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="deepreduce-ddp")


def _plain_allreduce(state, bucket):
    group = state.process_group if state.process_group is not None else dist.group.WORLD
    world = dist.get_world_size(group)
    work = dist.all_reduce(bucket.buffer().div_(world), group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def ddp_hook(state, bucket):
    """Average the bucket across ranks through ``state.grc`` (see the module docstring)."""
    if state.iteration < state.start_iter or state.iteration == state.resumed_at:
        state.advance(bucket)
        return _plain_allreduce(state, bucket)
    buffer = bucket.buffer()
    name = f"ddp.bucket{bucket.index()}"
    # spardl gathers a step's tensors in step(); a bucket is already a whole flat
    # buffer, so it is exchanged at once.
    send = getattr(state.grc, "exchange", state.grc.step)
    # The parameters' gradients, shaped, in the buffer's order (views of it).
    shaped = bucket.gradients() if getattr(state.grc.compressor, "needs_shapes", False) else None
    state.advance(bucket)
    future = torch.futures.Future()

    def average():
        if shaped is None:
            return send(buffer, name)
        return torch.cat([send(gradient, f"{name}.{i}").reshape(-1) for i, gradient in enumerate(shaped)])

    def exchange():
        try:
            future.set_result(average().to(buffer.dtype))
        except BaseException as error:  # DDP re-raises it where it waits for the bucket
            future.set_exception(error)

    if state.worker is None:
        exchange()
    else:
        pending = state.worker.submit(exchange)
        if bucket.is_last():
            # DDP's own collectives of the iteration (with find_unused_parameters, the
            # allreduce of which parameters were used) follow the last bucket's hook on
            # DDP's thread: the worker's exchanges end first, so that every rank issues
            # them all in one order. Nothing of the backward pass is left to overlap.
            pending.result()
    return future
