"""SparDL's sparse all-reduce against top-k allgather (GRACE style) and the dense
allreduce, on P local gloo processes (oversubscribed on a small machine).

    python benchmarks/spardl.py                       # P = 2 3 4 6 8, n = 1e6 1e7, rho = 0.01
    python benchmarks/spardl.py --workers 4 --numel 1000000 --repeat 5

For each P and n every rank draws its own Gaussian gradient (the same draw in every
configuration) and runs each configuration --repeat times after three warm-up exchanges
(top-k allgather's transport settles its block capacity in two, SparDL its h); the wall
time per exchange is the mean over the repeats on the slowest rank. Bytes and messages
are what one worker sends per exchange:

- SparDL: the bytes of its hop messages (framed, indices Rice-coded) as counted by the
  communicator, plus the 40-byte handshake allgather; messages = hops + the handshake.
- top-k allgather: the blocks the transport hands to gloo's all_gather, counted during
  the timed exchanges (in steady state one block per exchange: a 32-byte header and the
  top-k frame, zero-padded to the capacity the transport keeps for the largest frame
  seen), each forwarded to the P-1 other ranks by the ring; messages = P-1 per
  collective.
- dense allreduce: gloo's ring allreduce sends 2(P-1)/P of the float32 buffer in
  2(P-1) messages.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

CONFIGS = ("spardl d=1", "spardl d=2", "top-k allgather", "dense allreduce")
WARM_UP = 3


def make(config, density):
    import deepreduce
    if config.startswith("spardl"):
        return deepreduce.grace_from_params({"compressor": "topk", "memory": "residual", "communicator": "spardl",
                                             "compress_ratio": density, "spardl_teams": int(config[-1])})
    if config == "top-k allgather":
        return deepreduce.grace_from_params({"compressor": "topk", "memory": "residual",
                                             "communicator": "allgather", "compress_ratio": density})
    return None


def one_config(config, grad, density, repeat):
    """(seconds per exchange on this rank, bytes sent, messages sent) for one config."""
    import torch
    import torch.distributed as dist
    world = dist.get_world_size()
    grc = make(config, density)
    if config == "dense allreduce":
        tensor = torch.from_numpy(grad.copy())

        def exchange():
            dist.all_reduce(tensor)
        volume, messages = 2 * (world - 1) * grad.nbytes / world, 2 * (world - 1)
    elif config.startswith("spardl"):
        def exchange():
            grc.exchange(grad, "bench")
    else:
        def exchange():
            grc.step(grad, "bench")
    for _ in range(WARM_UP):
        exchange()  # (for SparDL: the last gives the traffic of one exchange)
    if config.startswith("spardl"):
        volume = grc.last_traffic.bytes_sent + 40
        messages = grc.last_traffic.messages + 1
    elif config == "top-k allgather":
        handed = count_allgathers(grc.transport)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(repeat):
        exchange()
    seconds = (time.perf_counter() - start) / repeat
    if config == "top-k allgather":
        volume = (world - 1) * handed["bytes"] // repeat
        messages = (world - 1) * handed["collectives"] // repeat
    return seconds, volume, messages


def count_allgathers(transport):
    """Count, from now on, the bytes this rank hands to the transport's two all_gathers
    (the fixed-size blocks, and the rest of a frame past their capacity) and the calls."""
    handed = {"bytes": 0, "collectives": 0}

    def counted(gather):
        def call(data, *rest):
            handed["bytes"] += data.nbytes
            handed["collectives"] += 1
            return gather(data, *rest)
        return call
    transport._allgather_fixed = counted(transport._allgather_fixed)
    transport._allgatherv_bytes = counted(transport._allgatherv_bytes)
    return handed


def worker(rank, world, numels, density, repeat, out):
    """One rank, in the gloo group deepreduce.train.launch.spawn starts it in: every
    configuration on its own draws; rank 0 writes the rows to ``out``."""
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    rows = []
    for n in numels:
        grad = np.random.default_rng([rank, n]).standard_normal(n).astype(np.float32)
        for config in CONFIGS:
            if config == "spardl d=2" and world % 2:
                continue
            seconds, volume, messages = one_config(config, grad, density, repeat)
            everyone = [None] * world
            dist.all_gather_object(everyone, (seconds, volume, messages))
            if rank == 0:
                rows.append({"P": world, "n": n, "config": config,
                             "seconds": max(e[0] for e in everyone),
                             "bytes": max(e[1] for e in everyone),
                             "messages": max(e[2] for e in everyone)})
    if rank == 0:
        with open(out, "w") as f:
            json.dump(rows, f)


def run_world(world, numels, density, repeat):
    import tempfile

    # The train command's launcher: its ranks also leave without the interpreter's
    # teardown, where a gloo rank was seen to abort now and then under load.
    from deepreduce.train.launch import spawn
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        spawn(worker, world, (numels, density, repeat, out))
        with open(out) as f:
            return json.load(f)


def fmt_bytes(n):
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def table(rows):
    lines = ["| P | n | configuration | ms per exchange | bytes sent per worker | messages per worker |",
             "|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['P']} | {r['n']:.0e} | {r['config']} | {1e3 * r['seconds']:.1f} | "
                     f"{fmt_bytes(r['bytes'])} | {r['messages']} |")
    return "\n".join(lines)


def targets(rows):
    """SparDL d=1 against top-k allgather at each (P, n): bytes and time ratios."""
    lines = []
    by = {(r["P"], r["n"], r["config"]): r for r in rows}
    for (p, n, config), r in sorted(by.items()):
        if config != "spardl d=1" or (p, n, "top-k allgather") not in by:
            continue
        t = by[(p, n, "top-k allgather")]
        lines.append(f"P={p} n={n:.0e}: SparDL/top-k bytes {r['bytes'] / t['bytes']:.2f}x, "
                     f"time {r['seconds'] / t['seconds']:.2f}x")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, nargs="+", default=[2, 3, 4, 6, 8], help="world sizes P")
    p.add_argument("--numel", type=float, nargs="+", default=[1e6, 1e7], help="gradient sizes n")
    p.add_argument("--density", type=float, default=0.01, help="rho (default 0.01)")
    p.add_argument("--repeat", type=int, default=3, help="timed exchanges per configuration")
    p.add_argument("--json", help="also write the rows to this file")
    args = p.parse_args(argv)
    rows = []
    for world in args.workers:
        start = time.perf_counter()
        rows += run_world(world, [int(n) for n in args.numel], args.density, args.repeat)
        print(f"P={world} done in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print(table(rows))
    print()
    print(targets(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
