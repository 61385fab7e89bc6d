"""GRACE-style data-parallel SGD in one worker.

Every rank holds a full model replica, trains on its own shard, and replaces each gradient by
the aggregate ``grc.step`` returns before the optimizer step, exactly as GRACE's training
scripts do. All ranks start from the same parameters (same seed, then a broadcast from rank 0)
and apply the same aggregates, so they stay in step; evaluation is sharded and summed.
"""
import math
import os
import time

import torch
import torch.distributed as dist

from .accounting import read_totals
from .data import generator, load_dataset, shard_batches, steps_per_epoch
from .models import build_model, count_parameters
from .tasks import TASKS

EVAL_BATCH = 512
# Keys of the accounting counters, in the order they travel in one all-reduce.
COUNTERS = ("bytes_sent", "dense_bytes", "encode_seconds", "decode_seconds")


def make_communicator(params):
    """grc for a params dict; a 'deepreduce' key wraps the sparsifier in a DeepReduce codec."""
    import deepreduce
    return deepreduce.deepreduce_from_params(dict(params))


def check_communicator(params, workers, launcher):
    """Build grc for ``params`` and refuse, before any worker starts, params whose world
    is not the run's ``workers`` (launched by ``launcher``: 'spawn', 'torchrun' or
    'mpirun'). A 'local' transport, or 'mpi' outside mpirun, gave each worker a world of
    its own: every one trained alone, and the log looked like a normal run."""
    make_communicator(params)
    if params.get("world_size") not in (None, workers):
        raise ValueError(f"params' world_size={params['world_size']!r}, but the run has {workers} workers: "
                         "leave world_size out (the workers' count is taken) or change --workers")
    transport = params.get("transport")
    if workers > 1 and (transport == "local" or (transport == "mpi" and launcher != "mpirun")):
        raise ValueError(f"params' transport={transport!r} gives each of the {workers} workers a world of its own"
                         f"{'' if transport == 'local' else ' outside mpirun'}: they would train alone. Leave "
                         "'transport' out (the run's gloo group is taken), or launch under mpirun for 'mpi'")


def make_optimizer(cfg, model):
    if cfg.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    # make_config admits config.OPTIMIZERS only: the other is sgd.
    return torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)


def make_schedule(cfg, optimizer):
    """Per-epoch lr schedule; 'step' is He et al.'s x0.1 after 50% and 75% of training.
    A milestone is a count of epochs done, so each is rounded up (after 75% of 10 epochs:
    after the 8th), and one at the end of training or at 0 is left out: with epochs // 2,
    a 1-epoch run had its milestones at 0 and trained at 0.01 lr throughout, and a
    2-epoch run skipped the x0.1 stage."""
    marks = (math.ceil(cfg.epochs / 2), math.ceil(cfg.epochs * 3 / 4)) if cfg.lr_decay == "step" else ()
    milestones = [m for m in marks if 0 < m < cfg.epochs]
    return torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=milestones, gamma=0.1)


def _sum_across_ranks(values):
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t)
    return t.tolist()


def _broadcast_state(model):
    for t in list(model.parameters()) + list(model.buffers()):
        dist.broadcast(t.data, src=0)


def _average_buffers(model, world_size):
    # BatchNorm running statistics are local (they never pass through grc); average them so
    # every rank evaluates the same model.
    for b in model.buffers():
        if b.is_floating_point():
            dist.all_reduce(b.data)
            b.data /= world_size


def evaluate(model, task, test, rank, world_size):
    """Metric and mean loss over the whole test set, each rank scoring a contiguous slice."""
    model.eval()
    idx = torch.arange(len(test[0])).tensor_split(world_size)[rank]
    score = loss = count = 0.0
    for chunk in idx.split(EVAL_BATCH):
        s, l, n = task.evaluate(model, tuple(t[chunk] for t in test))
        score, loss, count = score + s, loss + l, count + n
    score, loss, count = _sum_across_ranks([score, loss, count])
    return score / count, loss / count


def _delta(after, before):
    return [after[k] - before[k] for k in COUNTERS]


def stage_of(grc):
    """The compressor's training stage, for compressors that have stages (LGC's
    ``stage_label``); None for the others."""
    label = getattr(grc.compressor, "stage_label", None)
    return label() if callable(label) else None


class GradientBuckets:
    """The tensors ``grc.step`` sees. Without fusion, one per parameter under its own name,
    as GRACE's scripts call it. With fusion, consecutive parameters packed into flat buckets
    of at most ``fusion`` bytes (a parameter larger than that is a bucket of its own), as
    Horovod's fusion buffer packs them: fewer calls, fewer frame headers, and a sparsifier's
    k counted over the bucket. A bucket's flat buffer is allocated once and reused."""

    def __init__(self, model, fusion):
        self.buckets = []  # (name, [(param name, param)], flat buffer or None)
        group, group_bytes = [], 0
        for name, p in model.named_parameters():
            size = p.numel() * p.element_size()
            if group and (not fusion or group_bytes + size > fusion):
                self._close(group)
                group, group_bytes = [], 0
            group.append((name, p))
            group_bytes += size
        if group:
            self._close(group)

    def _close(self, group):
        if len(group) == 1:
            self.buckets.append((group[0][0], group, None))
            return
        name = f"fused[{group[0][0]}..{group[-1][0]}]"
        flat = torch.empty(sum(p.numel() for _, p in group), dtype=group[0][1].dtype)
        self.buckets.append((name, group, flat))

    def exchange(self, grc):
        """Replace every gradient by the aggregate ``grc.step`` returns."""
        for name, group, flat in self.buckets:
            for _, p in group:
                # A parameter a batch did not reach still takes part in every collective.
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            if flat is None:
                (_, p), = group
                p.grad.copy_(grc.step(p.grad, name))
                continue
            torch.cat([p.grad.reshape(-1) for _, p in group], out=flat)
            aggregate = grc.step(flat, name).reshape(-1)
            offset = 0
            for _, p in group:
                p.grad.copy_(aggregate[offset:offset + p.numel()].view_as(p.grad))
                offset += p.numel()


def train_epoch(model, optimizer, grc, buckets, task, dataset, cfg, epoch, rank, world_size, bar):
    """One pass over this rank's shard. Returns the accounting deltas of every step (rows of
    COUNTERS), the summed training loss and sample count, and the compressor's stage at
    every step (None for compressors without stages)."""
    model.train()
    tensors = dataset.train_tensors(epoch - 1)
    batches = shard_batches(len(tensors[0]), rank, world_size, cfg.batch_size, cfg.seed, epoch)
    aug = generator(cfg.seed, epoch, rank)
    loss_sum, seen, per_step, stages = 0.0, 0, [], []
    for idx in batches:
        stages.append(stage_of(grc))
        before = read_totals()
        batch = tuple(t[idx] for t in tensors)
        if dataset.augment is not None and len(idx):
            batch = (dataset.augment(batch[0], aug),) + batch[1:]
        optimizer.zero_grad(set_to_none=True)
        if len(idx):
            loss = task.loss(model, batch)
            loss.backward()
            loss_sum, seen = loss_sum + loss.item() * len(idx), seen + len(idx)
        buckets.exchange(grc)
        optimizer.step()
        per_step.append(_delta(read_totals(), before))
        if bar is not None:
            bar.update(1)
    return per_step, loss_sum, seen, stages


def _epoch_record(epoch, rows, loss_sum, seen, metric, test_loss, prev, world_size, wall_s):
    sent, dense, enc, dec = (sum(col) for col in zip(*rows))
    return dict(
        epoch=epoch, metric=metric, test_loss=test_loss, train_loss=loss_sum / max(seen, 1),
        bytes_sent=int(sent), dense_bytes=int(dense),
        cum_bytes_sent=prev["cum_bytes_sent"] + int(sent),
        cum_dense_bytes=prev["cum_dense_bytes"] + int(dense),
        # Mean over ranks of the per-step codec time.
        encode_s_per_step=enc / world_size / len(rows),
        decode_s_per_step=dec / world_size / len(rows),
        wall_s=wall_s)


def _progress_bar(label, cfg, dataset, world_size, channel):
    steps = steps_per_epoch(len(dataset.train_tensors(0)[0]), world_size, cfg.batch_size)
    if channel is not None:  # the process that spawned us draws the bar
        from .progress import ChannelBar
        return ChannelBar(channel, label, cfg.epochs * steps)
    import threading

    from tqdm import tqdm
    # tqdm's default lock is a multiprocessing one, a named semaphore that a worker leaving
    # by os._exit (launch.leave) never unlinks: the run would end with Python's "leaked
    # semaphore" warning. One process draws this bar, so a thread lock is enough.
    tqdm.set_lock(threading.RLock())
    return tqdm(total=cfg.epochs * steps, desc=label, unit="step", dynamic_ncols=True)


def train_run(label, params, cfg, dataset, rank, world_size, channel=None):
    """Train one model with one params dict; returns its log (identical on every rank).
    ``channel``: a queue to send rank 0's progress to, instead of drawing a bar here."""
    task = TASKS[dataset.task]
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, dataset.meta, cfg.hidden)
    _broadcast_state(model)
    optimizer = make_optimizer(cfg, model)
    schedule = make_schedule(cfg, optimizer)
    # With the run's world size, the transport is checked to be the run's at the first step.
    grc = make_communicator({**params, "world_size": world_size})
    buckets = GradientBuckets(model, cfg.fusion)
    bar = _progress_bar(label, cfg, dataset, world_size, channel) if rank == 0 and cfg.progress else None

    metric, test_loss = evaluate(model, task, dataset.test, rank, world_size)
    epochs = [dict(epoch=0, metric=metric, test_loss=test_loss, train_loss=None, bytes_sent=0,
                   dense_bytes=0, cum_bytes_sent=0, cum_dense_bytes=0,
                   encode_s_per_step=0.0, decode_s_per_step=0.0, wall_s=0.0)]
    steps_log, stage_changes = [], []
    start = time.perf_counter()
    for epoch in range(1, cfg.epochs + 1):
        if bar is not None:
            bar.set_postfix({"epoch": epoch, task.metric: f"{metric:.4f}"})
        per_step, loss_sum, seen, stages = train_epoch(model, optimizer, grc, buckets, task, dataset, cfg, epoch,
                                                       rank, world_size, bar)
        for step, stage in enumerate(stages):
            if stage != (stage_changes[-1]["stage"] if stage_changes else None):
                stage_changes.append(dict(epoch=epoch, step=step, stage=stage))
                if rank == 0 and cfg.prints:
                    print(f"[{label}] epoch {epoch} step {step}: {stage}", flush=True)
        schedule.step()
        # One all-reduce per epoch carries the per-step counters of all ranks.
        flat = _sum_across_ranks([v for row in per_step for v in row] + [loss_sum, seen])
        rows = [flat[i:i + len(COUNTERS)] for i in range(0, len(flat) - 2, len(COUNTERS))]
        steps_log += [dict(epoch=epoch, step=step, bytes_sent=int(row[0]), dense_bytes=int(row[1]),
                           **({"stage": stages[step]} if stages[step] is not None else {}))
                      for step, row in enumerate(rows)]
        _average_buffers(model, world_size)
        metric, test_loss = evaluate(model, task, dataset.test, rank, world_size)
        epochs.append(_epoch_record(epoch, rows, flat[-2], flat[-1], metric, test_loss,
                                    epochs[-1], world_size, time.perf_counter() - start))
    if bar is not None:
        bar.set_postfix({"epoch": cfg.epochs, task.metric: f"{metric:.4f}"})
        bar.close()
    last = epochs[-1]
    return dict(label=label, params=params, metric_name=task.metric,
                parameters=count_parameters(model), epochs=epochs, steps=steps_log,
                stage_changes=stage_changes,
                final=dict(metric=last["metric"], test_loss=last["test_loss"],
                           bytes_sent=last["cum_bytes_sent"], dense_bytes=last["cum_dense_bytes"],
                           wall_s=last["wall_s"]))


def _set_threads(world_size):
    # Share the cores among the local workers; the same count under every launcher keeps
    # results identical across them. torchrun tells us how many workers share this host.
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))


def run_worker(rank, world_size, cfg, channel=None):
    """Body of every worker (the process group is already initialised): train each run in
    ``cfg.runs`` in turn; rank 0 writes the logs and plot and prints the summary."""
    _set_threads(world_size)
    dataset = load_dataset(cfg.dataset, cfg.data_dir, seed=cfg.seed)
    results = [train_run(label, params, cfg, dataset, rank, world_size, channel)
               for label, params in cfg.runs]
    if rank == 0:
        from .report import write_outputs
        write_outputs(cfg, world_size, results)
    dist.barrier()
    return results
