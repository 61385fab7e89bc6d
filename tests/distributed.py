"""Run a function on N real processes joined by torch.distributed (gloo over loopback).

``run(fn, world_size, *args)`` spawns the workers, each initialising a gloo process group
on a free port, calls ``fn(rank, world_size, *args)`` in each, and returns the list of
results in rank order. A worker's exception is re-raised in the test with its traceback;
the whole run is bounded by ``timeout`` seconds so a hang fails instead of blocking CI.
"""
import multiprocessing as mp
import os
import socket
import traceback
from datetime import timedelta


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(fn, rank, world_size, port, pg_timeout, args, queue):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size, timeout=timedelta(seconds=pg_timeout))
        try:
            queue.put((rank, "ok", fn(rank, world_size, *args)))
        finally:
            dist.destroy_process_group()
    except BaseException:  # report everything, including SystemExit from the function
        queue.put((rank, "error", traceback.format_exc()))


def run(fn, world_size, *args, timeout=120, pg_timeout=30):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(fn, r, world_size, port, pg_timeout, args, queue))
             for r in range(world_size)]
    for p in procs:
        p.start()
    results, errors = {}, []
    try:
        for _ in range(world_size):
            rank, status, value = queue.get(timeout=timeout)
            if status == "ok":
                results[rank] = value
            else:
                errors.append(f"rank {rank}:\n{value}")
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    if errors:
        raise AssertionError("worker failed:\n" + "\n".join(errors))
    return [results[r] for r in range(world_size)]
