"""The DDP communication hook with and without overlap: step time on 2 gloo ranks.

    python benchmarks/ddp_overlap.py [--steps 30] [--width 1024] [--layers 6] [--bucket-mb 4]
    python benchmarks/ddp_overlap.py --link 1gbit --repeats 3     # as root: over a 1 Gbit/s link

An MLP of ``layers`` square layers of ``width`` (float32), split by DDP into buckets of
``bucket-mb``, trained with deepreduce's hook on 2 spawned ranks (gloo over loopback, one
torch thread each). The synchronous hook compresses and exchanges each bucket inside DDP's
reducer; the overlapping one hands it to a worker thread and returns a pending Future, so
bucket i is compressed and exchanged while backward computes bucket i+1. The table gives
the median step time of each (after warm-up, pooled over the repeats, which alternate the
two hooks), their ratio, and whether the parameters after all steps are identical (they
must be).

On one machine the ranks' loopback moves GB/s, so an exchange costs the CPU time of its
copies and little else, and with one core per rank the worker thread shares that core with
the backward pass: only the wait for the other rank can be hidden. ``--link RATE`` runs both
ranks inside a network namespace whose loopback is limited to RATE (limited_link.py's
harness: root and iproute2), so each exchange also waits on the wire as it would between
hosts, and that wait is what overlap hides.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist

METHODS = {
    "topk 1%": {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.01},
    "qsgd": {"compressor": "qsgd", "memory": "none", "communicator": "allgather"},
    "fp16": {"compressor": "fp16", "memory": "none", "communicator": "allreduce"},
}


def make_model(width, layers):
    torch.manual_seed(0)
    blocks = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*blocks, torch.nn.Linear(width, 10))


def train_steps(model_args, params, overlap, rank):
    """``model_args.steps`` steps of a fresh model under the hook; the step times, a digest of
    the final parameters and how many buckets DDP handed the hook."""
    from torch.nn.parallel import DistributedDataParallel
    from deepreduce.torch import DeepReduceHookState, ddp_hook
    model = DistributedDataParallel(make_model(model_args.width, model_args.layers),
                                    bucket_cap_mb=model_args.bucket_mb)
    seen = set()

    def counting_hook(state, bucket):
        seen.add(bucket.index())
        return ddp_hook(state, bucket)
    model.register_comm_hook(DeepReduceHookState(params, overlap=overlap), counting_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(rank)
    times = []
    for _ in range(model_args.steps):
        x = torch.randn(model_args.batch, model_args.width, generator=gen)
        y = torch.randint(0, 10, (model_args.batch,), generator=gen)
        dist.barrier()
        start = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    digest = hashlib.sha256(flat.numpy().tobytes()).hexdigest()  # small enough for a pipe
    return times[model_args.warmup:], digest, len(seen)


def worker(rank, world_size, args, out):
    """One rank, in the gloo group deepreduce.train.launch.spawn starts it in: every method
    under both hooks; rank 0 writes the rows to ``out``."""
    torch.set_num_threads(1)
    rows = []
    for repeat in range(args.repeats):
        # Each repeat swaps which hook goes first, so a drift in the machine's load over the
        # run falls on both alike.
        for label, params in METHODS.items():
            for overlap in ((False, True) if repeat % 2 == 0 else (True, False)):
                rows.append((label, overlap, *train_steps(args, params, overlap, rank)))
    if rank == 0:
        with open(out, "w") as f:
            json.dump(rows, f)


def summarize(rows):
    """Per method: (buckets, synchronous median s, overlapped median s, every run's parameters
    identical), the medians over the steps of every repeat."""
    table = {}
    for label in METHODS:
        mine = [r for r in rows if r[0] == label]
        median = {overlap: statistics.median(t for r in mine if r[1] == overlap for t in r[2])
                  for overlap in (False, True)}
        same = len({r[3] for r in mine}) == 1
        table[label] = (max(r[4] for r in mine), median[False], median[True], same)
    return table


def run_in_namespace(args, argv):
    """This benchmark again, inside a namespace whose loopback is limited to ``args.link``."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:  # main() called from elsewhere than this folder's script
        sys.path.insert(0, here)
    from limited_link import RATES, NamespaceError, link_namespace
    try:
        with link_namespace(RATES[args.link], "ddp") as namespace:
            return subprocess.run(["ip", "netns", "exec", namespace, sys.executable, os.path.abspath(__file__),
                                   *argv, "--in-namespace"]).returncode
    except NamespaceError as e:
        sys.exit(f"ddp_overlap: cannot limit the link ({e}); run as root with iproute2 installed, "
                 "or leave out --link")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=30, help="training steps per configuration (default: 30)")
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the median (default: 5)")
    p.add_argument("--width", type=int, default=1024, help="width of the square layers (default: 1024)")
    p.add_argument("--layers", type=int, default=6, help="square layers (default: 6)")
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step (default: 64)")
    p.add_argument("--bucket-mb", type=float, default=4.0, help="DDP bucket size in MB (default: 4)")
    p.add_argument("--repeats", type=int, default=1,
                   help="train each method with each hook this many times, alternating which "
                        "hook goes first (default: 1)")
    p.add_argument("--link", choices=("100mbit", "1gbit", "10gbit"),
                   help="limit the ranks' link to this rate (a network namespace with a tbf "
                        "qdisc on its loopback; needs root and iproute2). Default: plain loopback")
    p.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steps <= args.warmup or args.repeats < 1:
        p.error("--steps must exceed --warmup, and --repeats be at least 1")
    if args.link and not args.in_namespace:
        return run_in_namespace(args, argv)
    # The train command's launcher: its ranks also leave without the interpreter's
    # teardown, where a gloo rank was seen to abort now and then under load.
    from deepreduce.train.launch import spawn
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        spawn(worker, 2, (args, out))
        with open(out) as f:
            rows = json.load(f)
    params = sum(p.numel() for p in make_model(args.width, args.layers).parameters())
    link = f"a {args.link} link" if args.link else "loopback"
    print(f"MLP {args.layers}x{args.width} ({params:,} parameters, {4 * params / 1e6:.1f} MB of gradients), "
          f"buckets of {args.bucket_mb} MB, 2 gloo ranks over {link}, "
          f"median of {args.repeats} x {args.steps - args.warmup} steps")
    print(f"{'method':<10} {'buckets':>8} {'synchronous ms':>15} {'overlapped ms':>14} {'speed-up':>9} {'same params':>12}")
    for label, (buckets, sync, over, same) in summarize(rows).items():
        print(f"{label:<10} {buckets or '-':>8} {1e3 * sync:>15.1f} {1e3 * over:>14.1f} {sync / over:>8.2f}x "
              f"{str(same):>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
