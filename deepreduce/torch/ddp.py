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
  name (``ddp.bucket3.1``: the bucket's second), as torch's ``powerSGD_hook`` takes them,
  but for the bucket's vectors, sent together as one (``ddp.bucket3.vectors``).
- DDP builds provisional buckets for the first iteration and rebuilds them, in gradient
  ready order, at the start of the second. Per-bucket state (residuals, momenta) made in
  iteration 0 would then belong to buckets of another size. So iteration 0 is a plain
  averaging allreduce, and compression starts once the buckets are final
  (``start_iter``, default 1). With ``static_graph=True`` DDP rebuilds them a step later,
  at the start of the third iteration, and a model loaded from a checkpoint starts on
  provisional buckets again: the hook knows each bucket by the shapes of its parameters,
  and a bucket whose parameters changed starts its memory afresh (``forget``), as a
  first step would, where it used to meet a residual of another size.
- Overlap (the default): the hook hands the bucket to one worker thread and returns a
  pending Future at once, so the compression and the exchange of bucket i run while the
  backward pass computes the gradients of bucket i+1; DDP waits for every Future before
  the optimizer step. One thread, fed in the order DDP calls the hook (the same on every
  rank), keeps the exchanges in the same order everywhere, so the results are the
  synchronous hook's exactly. They run on a process group of their own (same ranks,
  made at the first compressed bucket): the backward pass goes on beside them and may
  run collectives on DDP's group (SyncBatchNorm, find_unused_parameters' allreduce of
  the parameters used), which on one group would reach the ranks in different orders
  and hang. ``overlap=False`` runs each exchange inside the hook, on DDP's group.
- A process group (DDP's ``process_group``, given to the state as to torch's
  ``PowerSGDState``): the compressed exchange runs within its ranks, as DDP's allreduce
  does.
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
from ..errors import ParameterTypeError
from ..transports.torch_dist import GroupOfItsOwn, TorchTransport
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
        if not isinstance(params, dict):  # dict([]) built a dense state, unsaid
            raise ParameterTypeError(f"params must be a dict, got {type(params).__name__}")
        params = dict(params)
        if process_group is not None and params.get("transport") not in (None, "torch"):
            raise ValueError(f"params' transport {params['transport']!r} and process_group both say where "
                             "the buckets go: pass process_group alone (DDP's group)")
        # The buckets are averaged across DDP's ranks, so the communicator (and any part
        # with collectives of its own: powersgd, dgc's clipping) exchanges there: on DDP's
        # group itself, or, from the worker thread, on a group of its own of those ranks
        # (see the module docstring).
        self.own_group = None
        if overlap and params.get("transport") in (None, "torch"):
            self.own_group = params["transport"] = GroupOfItsOwn(process_group)
        elif process_group is not None:
            params["transport"] = TorchTransport(process_group)
        # deepreduce_from_params: a 'deepreduce' key wraps the compressor in its codec, as the
        # train command and the federated mode do (grace_from_params left it out unsaid).
        self.grc = deepreduce_from_params(params)
        self.process_group = process_group
        self.start_iter = start_iter
        self.iteration = 0
        # bucket index -> the shapes of its parameters, when it was last compressed.
        self.layouts = {}
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

    @staticmethod
    def vectors_name(bucket):
        """The name a bucket's vectors are sent under together (``_in_shapes``)."""
        return f"ddp.bucket{bucket.index()}.vectors"

    def bucket_names(self, bucket, shaped):
        """The names the bucket's state is kept under: its own, or with ``shaped`` (the
        gradients, for a compressor that needs shapes) one per gradient. A bucket whose
        parameters are not those it had when last compressed (DDP rebuilt the buckets:
        ``static_graph`` does so a step late, a model loaded from a checkpoint starts on
        provisional ones) has its memory forgotten, as the residual of another bucket."""
        name = f"ddp.bucket{bucket.index()}"

        def names(count):
            return [name] if shaped is None else [f"{name}.{i}" for i in range(count)]
        layout = tuple(tuple(p.shape) for p in bucket.parameters())
        before = self.layouts.get(bucket.index())
        if before is not None and before != layout:
            for stale in names(len(before)) + ([self.vectors_name(bucket)] if shaped is not None else []):
                self.grc.memory.forget(stale)
        self.layouts[bucket.index()] = layout
        return names(len(layout))


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
    # spardl gathers a step's tensors in step(); a bucket is already a whole flat
    # buffer, so it is exchanged at once.
    send = getattr(state.grc, "exchange", state.grc.step)
    # The parameters' gradients, shaped, in the buffer's order (views of it).
    shaped = bucket.gradients() if getattr(state.grc.compressor, "needs_shapes", False) else None
    names = state.bucket_names(bucket, shaped)
    state.advance(bucket)
    if state.own_group is not None:
        state.own_group.make()  # here, on DDP's thread: at one point of the program on every rank
    future = torch.futures.Future()

    def average():
        if shaped is None:
            return send(buffer, names[0])
        return _in_shapes(send, shaped, names, state.vectors_name(bucket))

    def exchange():
        try:
            future.set_result(average().to(buffer.dtype))
        except BaseException as error:  # raised again by _averaged, where DDP waits for the bucket
            future.set_exception(error)

    if state.worker is None:
        exchange()
    else:
        state.worker.submit(exchange)
    return future.then(_averaged)


def _in_shapes(send, shaped, names, vectors_name):
    """The bucket's gradients sent in their shapes (for a compressor that needs them:
    powersgd), back as one flat tensor in the buffer's order. Its vectors go together,
    as one, under ``vectors_name``: such a compressor sends them dense, and one exchange
    per bias vector was a collective each (1,000 of them took 30 times torch's
    powerSGD_hook)."""
    vectors = [i for i, gradient in enumerate(shaped) if gradient.dim() <= 1]
    out = [None] * len(shaped)
    if vectors:
        joined = send(torch.cat([shaped[i].reshape(-1) for i in vectors]), vectors_name).reshape(-1)
        for i, part in zip(vectors, joined.split([shaped[i].numel() for i in vectors])):
            out[i] = part
    for i, (name, gradient) in enumerate(zip(names, shaped)):
        if out[i] is None:
            out[i] = send(gradient, name).reshape(-1)
    return torch.cat(out)


def _averaged(future):
    """The bucket's average, or its exchange's error raised here: in a callback, DDP reports
    an error with its type, message and traceback, where a future failed by set_exception
    reached the user as "Unable to cast <the message> to Tensor"."""
    return future.value()
