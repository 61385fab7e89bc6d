"""The DDP communication hook with and without overlap: step time on 2 gloo ranks.

    python benchmarks/ddp_overlap.py [--steps 30] [--width 1024] [--layers 6] [--bucket-mb 4]

An MLP of ``layers`` square layers of ``width`` (float32), split by DDP into buckets of
``bucket-mb``, trained with deepreduce's hook on 2 spawned ranks (gloo over loopback, one
torch thread each). The synchronous hook compresses and exchanges each bucket inside DDP's
reducer; the overlapping one hands it to a worker thread and returns a pending Future, so
bucket i is compressed and exchanged while backward computes bucket i+1. The table gives
the median step time of each (after warm-up), their ratio, and whether the parameters
after all steps are identical (they must be).
"""
import argparse
import hashlib
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

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


def worker(rank, world_size, port, args, queue):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    from torch.nn.parallel import DistributedDataParallel
    from deepreduce.torch import DeepReduceHookState, ddp_hook
    rows = []
    for label, params in METHODS.items():
        for overlap in (False, True):
            model = DistributedDataParallel(make_model(args.width, args.layers), bucket_cap_mb=args.bucket_mb)
            seen = set()

            def counting_hook(state, bucket, seen=seen):
                seen.add(bucket.index())
                return ddp_hook(state, bucket)
            model.register_comm_hook(DeepReduceHookState(params, overlap=overlap), counting_hook)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            gen = torch.Generator().manual_seed(rank)
            times = []
            for step in range(args.steps):
                x = torch.randn(args.batch, args.width, generator=gen)
                y = torch.randint(0, 10, (args.batch,), generator=gen)
                dist.barrier()
                start = time.perf_counter()
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
                times.append(time.perf_counter() - start)
            flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            buckets = len(seen)
            digest = hashlib.sha256(flat.numpy().tobytes()).hexdigest()  # small enough for a pipe
            rows.append((label, overlap, statistics.median(times[args.warmup:]), digest, buckets))
    if rank == 0:
        queue.put(rows)
    dist.destroy_process_group()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=30, help="training steps per configuration (default: 30)")
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the median (default: 5)")
    p.add_argument("--width", type=int, default=1024, help="width of the square layers (default: 1024)")
    p.add_argument("--layers", type=int, default=6, help="square layers (default: 6)")
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step (default: 64)")
    p.add_argument("--bucket-mb", type=float, default=4.0, help="DDP bucket size in MB (default: 4)")
    args = p.parse_args(argv)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    context = mp.start_processes(worker, args=(2, port, args, queue), nprocs=2, start_method="spawn", join=False)
    rows = queue.get()  # before joining: rank 0 cannot exit until its rows are read
    while not context.join():
        pass
    params = sum(p.numel() for p in make_model(args.width, args.layers).parameters())
    print(f"MLP {args.layers}x{args.width} ({params:,} parameters, {4 * params / 1e6:.1f} MB of gradients), "
          f"buckets of {args.bucket_mb} MB, 2 gloo ranks, median of {args.steps - args.warmup} steps")
    print(f"{'method':<10} {'buckets':>8} {'synchronous ms':>15} {'overlapped ms':>14} {'speed-up':>9} {'same params':>12}")
    by = {(label, overlap): (t, flat, b) for label, overlap, t, flat, b in rows}
    for label in METHODS:
        sync, flat_sync, buckets = by[label, False]
        over, flat_over, _ = by[label, True]
        print(f"{label:<10} {buckets or '-':>8} {1e3 * sync:>15.1f} {1e3 * over:>14.1f} {sync / over:>8.2f}x "
              f"{str(flat_sync == flat_over):>12}")


if __name__ == "__main__":
    main()
