"""A training script written for GRACE, used by the tests as GRACE users write it: imports
from grace_dl, a loop over named_parameters calling grc.step. It trains a small MLP on a
fixed synthetic classification task with every rank on its own shard. Params that name a
``deepreduce`` mode get the compressor wrapped the way DeepReduce's README does it."""
import torch
import torch.nn.functional as F

from grace_dl.dist.compressor.deepreduce import DeepReduce, IndexCompressor, ValueCompressor
from grace_dl.dist.helper import grace_from_params


def synthetic_task(seed=0, n=512, features=20, classes=4):
    """Gaussian clusters around fixed centers; ``seed`` draws another sample of them."""
    centers = torch.randn(classes, features, generator=torch.Generator().manual_seed(1234)) * 2
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (n,), generator=gen)
    inputs = centers[labels] + torch.randn(n, features, generator=gen)
    return inputs, labels


def train(rank, world_size, params, steps=30, batch=32, lr=0.1, grc=None):
    """Returns the final parameters (flat), the full-data loss before training and after
    every step, and the held-out accuracy. ``grc``, when given, is used instead of the
    communicator ``params`` describe."""
    model = make_model()  # same initial model on every rank
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    grc = communicator(params) if grc is None else grc
    inputs, labels = synthetic_task()
    shard = torch.arange(rank, inputs.shape[0], world_size)
    with torch.no_grad():
        losses = [F.cross_entropy(model(inputs), labels).item()]
    for step in range(steps):
        idx = shard[(step * batch) % shard.numel():][:batch]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs[idx]), labels[idx])
        loss.backward()
        for name, p in model.named_parameters():
            p.grad.copy_(grc.step(p.grad, name))
        optimizer.step()
        with torch.no_grad():
            losses.append(F.cross_entropy(model(inputs), labels).item())
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return flat.numpy(), losses, accuracy(model)


def communicator(params):
    """grace_from_params, then DeepReduce's README snippet when params['deepreduce'] is set."""
    grc = grace_from_params(params)
    if params.get('deepreduce'):
        DReduce = {'value': ValueCompressor, 'index': IndexCompressor, 'both': DeepReduce}[params['deepreduce']](
            grc.compressor, params)
        grc.compressor = DReduce
    return grc


def accuracy(model):
    inputs, labels = synthetic_task(seed=1)  # held-out draw of the same task
    with torch.no_grad():
        return (model(inputs).argmax(1) == labels).float().mean().item()


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


class _MeanOverRanks(torch.autograd.Function):
    """The mean of a tensor over the ranks, with an allreduce in forward and another in
    backward, as SyncBatchNorm's statistics have (which needs a GPU)."""

    @staticmethod
    def forward(ctx, x):
        import torch.distributed as dist
        total = x.clone()
        dist.all_reduce(total)
        return total / dist.get_world_size()

    @staticmethod
    def backward(ctx, grad):
        return _MeanOverRanks.apply(grad)


class SyncCentering(torch.nn.Module):
    """Activations less their batch mean over every rank: a collective of the model's own
    in the backward pass, on DDP's group."""

    def forward(self, x):
        return x - _MeanOverRanks.apply(x.mean(0, keepdim=True))


def make_deep_model(width, depth, sync_centering):
    """``depth`` hidden layers of ``width`` (each followed by ``SyncCentering`` if asked)
    on the task's 20 features and 4 classes."""
    torch.manual_seed(0)
    layers, features = [], 20
    for _ in range(depth):
        layers += [torch.nn.Linear(features, width)] + ([SyncCentering()] if sync_centering else []) + \
            [torch.nn.ReLU()]
        features = width
    return torch.nn.Sequential(*layers, torch.nn.Linear(features, 4))


class WithSpareHead(torch.nn.Module):
    """``make_model()`` and a head its forward does not use: DDP needs
    find_unused_parameters=True for it."""

    def __init__(self):
        super().__init__()
        self.body = make_model()
        self.spare = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.body(x)


def train_ddp_hook(rank, world_size, params, steps=30, batch=32, overlap=True, find_unused=False):
    """The same training as ``train`` but through DDP with deepreduce's comm hook
    (``params=None``: DDP's own allreduce; ``overlap``: the hook's worker thread;
    ``find_unused``: a model with a parameter its forward skips, under DDP's
    find_unused_parameters=True). Returns the final parameters, the accuracy and the
    class of the compressor the hook ran (None for DDP's own allreduce)."""
    from deepreduce.torch import DeepReduceHookState
    state = None if params is None else DeepReduceHookState(params, overlap=overlap)
    model, optimizer = ddp_model(state, find_unused=find_unused)
    ddp_steps(rank, world_size, model, optimizer, 0, steps, batch)
    flat = torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])
    return flat.numpy(), accuracy(model.module), state and type(state.grc.compressor).__name__


def train_ddp_hook_watching_shapes(rank, world_size, params, steps=20, batch=32):
    """``train_ddp_hook`` under a hook around deepreduce's that looks at every bucket.
    Returns the final parameters, the accuracy, whether each bucket's gradients
    (``bucket.gradients()``) tiled its buffer in order, and the largest matrix rank of a
    2-D parameter's averaged gradient in the compressed iterations."""
    from deepreduce.stats import Stats
    from deepreduce.torch import DeepReduceHookState, ddp_hook
    state = DeepReduceHookState(params)
    state.grc.stats = Stats()  # this run's names alone (the process runs other jobs too)
    seen = {"tiled": True, "rank": 0}

    def watching(state, bucket):
        compressed = state.iteration >= state.start_iter
        gradients = bucket.gradients()
        shapes = [gradient.shape for gradient in gradients]
        seen["tiled"] &= torch.equal(torch.cat([g.reshape(-1) for g in gradients]), bucket.buffer())

        def look(future):
            averaged = future.value()
            for part, shape in zip(averaged.split([s.numel() for s in shapes]), shapes):
                if compressed and len(shape) == 2:
                    seen["rank"] = max(seen["rank"], int(torch.linalg.matrix_rank(part.reshape(shape))))
            return averaged
        return ddp_hook(state, bucket).then(look)

    model, optimizer = ddp_model(None)
    model.register_comm_hook(state, watching)
    ddp_steps(rank, world_size, model, optimizer, 0, steps, batch)
    flat = torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])
    matrices = sum(p.dim() >= 2 for p in model.module.parameters())
    return flat.numpy(), accuracy(model.module), seen["tiled"], seen["rank"], sorted(state.grc.stats.per_name), \
        matrices


def train_ddp_hook_failing(rank, world_size, overlap, steps=6, batch=32):
    """``train_ddp_hook`` (top-k) whose compressor raises on rank 0 from the fourth
    iteration on. Returns the message of the error this rank's step raised (None if none)."""
    from deepreduce.torch import DeepReduceHookState
    state = DeepReduceHookState({"compressor": "topk", "memory": "residual", "communicator": "allgather",
                                 "compress_ratio": 0.1}, overlap=overlap)
    compress = state.grc.compressor.compress

    def failing(tensor, name):
        if rank == 0 and state.iteration >= 4:
            raise ValueError("rank 0's compressor refuses")
        return compress(tensor, name)
    state.grc.compressor.compress = failing
    model, optimizer = ddp_model(state)
    try:
        ddp_steps(rank, world_size, model, optimizer, 0, steps, batch)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


def ddp_model(state, process_group=None, find_unused=False):
    """DDP over ``make_model()`` in several buckets (across ``process_group``, None: the
    default group; ``find_unused``: ``WithSpareHead`` under find_unused_parameters=True),
    with deepreduce's hook on ``state`` (None: DDP's own allreduce), and its SGD optimizer."""
    from torch.nn.parallel import DistributedDataParallel
    from deepreduce.torch import ddp_hook
    model = DistributedDataParallel(WithSpareHead() if find_unused else make_model(), process_group=process_group,
                                    bucket_cap_mb=0.001, find_unused_parameters=find_unused)
    if state is not None:
        model.register_comm_hook(state, ddp_hook)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def train_ddp_hook_deep(rank, world_size, params, overlap, width, depth, bucket_cap_mb, static_graph=False,
                        sync_centering=False, steps=20, batch=32):
    """``train_ddp_hook`` on ``make_deep_model`` under DDP's ``static_graph`` (its buckets
    rebuilt before the third iteration, not the second) or with ``sync_centering``.
    Returns the final parameters and the accuracy."""
    from torch.nn.parallel import DistributedDataParallel
    from deepreduce.torch import DeepReduceHookState, ddp_hook
    model = DistributedDataParallel(make_deep_model(width, depth, sync_centering), bucket_cap_mb=bucket_cap_mb,
                                    static_graph=static_graph)
    model.register_comm_hook(DeepReduceHookState(params, overlap=overlap), ddp_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    ddp_steps(rank, world_size, model, optimizer, 0, steps, batch)
    flat = torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])
    return flat.numpy(), accuracy(model.module)


def ddp_steps(rank, world_size, model, optimizer, first, last, batch, after=None):
    """Training steps first..last-1 on this rank's shard (``after(step)`` after each)."""
    inputs, labels = synthetic_task()
    shard = torch.arange(rank, inputs.shape[0], world_size)
    for step in range(first, last):
        idx = shard[(step * batch) % shard.numel():][:batch]
        optimizer.zero_grad()
        F.cross_entropy(model(inputs[idx]), labels[idx]).backward()
        optimizer.step()
        if after is not None:
            after(step)


def train_ddp_hook_in_pairs(rank, world_size, params, steps=20, batch=32):
    """``train_ddp_hook`` where DDP runs on subgroups of two ranks ({0, 1}, {2, 3}, ...),
    each pair on its own shards of the data (rank's of world_size): each pair's hook state
    is given the pair's group, as DDP is. Returns the final parameters, the size of the
    hook's transport, and that size again for the state pickled and loaded (a process group
    does not pickle: the loaded state takes the default group, as torch's PowerSGDState)."""
    import pickle
    import torch.distributed as dist
    from deepreduce.torch import DeepReduceHookState
    pairs = [dist.new_group([first, first + 1]) for first in range(0, world_size, 2)]  # every rank makes every group
    pair = pairs[rank // 2]
    state = None if params is None else DeepReduceHookState(params, process_group=pair)
    model, optimizer = ddp_model(state, process_group=pair)
    ddp_steps(rank, world_size, model, optimizer, 0, steps, batch)
    flat = torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])
    if state is None:
        return flat.numpy(), None, None
    return flat.numpy(), state.grc.transport.size, pickle.loads(pickle.dumps(state)).grc.transport.size


def train_ddp_hook_resumed(rank, world_size, params, steps=30, resume_at=15, batch=32):
    """``train_ddp_hook`` with a checkpoint after ``resume_at`` steps, as DDP users take
    one (the model's and the optimizer's state dicts, the hook state itself pickled by
    ``torch.save``), the rest of the steps on a model rebuilt from it. Returns the final
    parameters, the accuracy, and what the loaded hook state showed: its residuals'
    bytes against the saved ones', and how many steps its communicator counted after each
    of the first two resumed iterations (the first runs on provisional buckets again)."""
    import io
    from deepreduce.torch import DeepReduceHookState

    def counted(state):
        return sum(s.calls for s in state.grc.stats.per_name.values())

    state = DeepReduceHookState(params)
    model, optimizer = ddp_model(state)
    ddp_steps(rank, world_size, model, optimizer, 0, resume_at, batch)
    checkpoint = io.BytesIO()
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "hook": state}, checkpoint)
    saved = {name: r.numpy().tobytes() for name, r in state.grc.memory.residuals.items()}
    checkpoint.seek(0)
    loaded = torch.load(checkpoint, weights_only=False)
    resumed_state = loaded["hook"]
    model, optimizer = ddp_model(resumed_state)
    model.module.load_state_dict(loaded["model"])
    optimizer.load_state_dict(loaded["optimizer"])
    carried = {name: r.numpy().tobytes() for name, r in resumed_state.grc.memory.residuals.items()} == saved
    counts = [counted(resumed_state)]
    ddp_steps(rank, world_size, model, optimizer, resume_at, steps, batch,
              after=lambda step: counts.append(counted(resumed_state)) if step < resume_at + 2 else None)
    flat = torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])
    return flat.numpy(), accuracy(model.module), carried, counts
