"""Run a function on N real processes joined by torch.distributed (gloo over loopback).

``run(fn, world_size, *args)`` calls ``fn(rank, world_size, *args)`` on ranks 0..N-1 and
returns the results in rank order. A worker's exception is re-raised in the test with its
traceback; every run is bounded by ``timeout`` seconds so a hang fails instead of blocking.

The worker processes are real and separate, but they are kept for the whole test session:
each job initialises a fresh gloo process group on a new port and destroys it afterwards.
A worker that dies or hangs takes the pool down; the next job starts a new one. Workers
are forked from the fork server of ``deepreduce.train.launch.context()``, which has
imported torch once: a fresh Python importing torch costs seconds per process here.

``run_mpi(script, world_size, *args)`` runs a script of this folder under mpirun instead
and returns the JSON lines it printed.
"""
import atexit
import json
import os
import queue as queue_module
import shutil
import socket
import subprocess
import sys
import traceback
from datetime import timedelta


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_job(fn, rank, world_size, port, pg_timeout, args):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size, timeout=timedelta(seconds=pg_timeout))
    try:
        return fn(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


def _setup_worker():
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    torch.set_num_threads(1)


def _worker(fn, rank, world_size, port, pg_timeout, args, results):
    """A one-job worker in a process of its own."""
    try:
        _setup_worker()
        results.put((rank, "ok", _run_job(fn, rank, world_size, port, pg_timeout, args)))
    except BaseException:  # report everything, including SystemExit from the function
        results.put((rank, "error", traceback.format_exc()))


def _pool_worker(jobs, results):
    _setup_worker()
    while True:
        job = jobs.get()
        if job is None:
            return
        fn, rank, world_size, port, pg_timeout, args = job
        try:
            results.put((rank, "ok", _run_job(fn, rank, world_size, port, pg_timeout, args)))
        except BaseException:
            results.put((rank, "error", traceback.format_exc()))


class _Pool:
    def __init__(self):
        from deepreduce.train.launch import context  # imports torch
        self.ctx = context()
        self.workers = []  # (process, job queue)
        self.results = self.ctx.Queue()

    def ensure(self, size):
        while len(self.workers) < size:
            jobs = self.ctx.Queue()
            proc = self.ctx.Process(target=_pool_worker, args=(jobs, self.results), daemon=True)
            proc.start()
            self.workers.append((proc, jobs))

    def shutdown(self):
        for proc, jobs in self.workers:
            if proc.is_alive():
                jobs.put(None)
        for proc, _ in self.workers:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
        self.workers = []


_pool = None


def _collect(results, world_size, timeout, alive):
    values, errors = {}, []
    for _ in range(world_size):
        try:
            rank, status, value = results.get(timeout=timeout)
        except queue_module.Empty:
            dead = [r for r, ok in enumerate(alive()) if not ok]
            raise AssertionError(f"distributed job timed out after {timeout}s (dead ranks: {dead})") from None
        if status == "ok":
            values[rank] = value
        else:
            errors.append(f"rank {rank}:\n{value}")
    if errors:
        raise AssertionError("worker failed:\n" + "\n".join(errors))
    return [values[r] for r in range(world_size)]


def run(fn, world_size, *args, timeout=120, pg_timeout=30):
    global _pool
    if _pool is None:
        _pool = _Pool()
        atexit.register(lambda: _pool.shutdown() if _pool is not None else None)
    _pool.ensure(world_size)
    port = free_port()
    for rank in range(world_size):
        _pool.workers[rank][1].put((fn, rank, world_size, port, pg_timeout, args))
    try:
        return _collect(_pool.results, world_size, timeout,
                        lambda: [p.is_alive() for p, _ in _pool.workers[:world_size]])
    except BaseException:
        _pool.shutdown()  # a failed or hung job may leave workers mid-collective
        _pool = None
        raise


def run_mpi(script, world_size, *args, timeout=180):
    """Run tests/<script> under mpirun on ``world_size`` ranks (as root where need be, more
    ranks than cores allowed) with ``args`` as its command line; returns the JSON objects
    of the lines it printed that start with "{". Skips the test without mpirun or mpi4py."""
    import pytest
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")
    pytest.importorskip("mpi4py")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    done = subprocess.run([mpirun, "--oversubscribe", "-np", str(world_size), sys.executable,
                           os.path.join(os.path.dirname(__file__), script)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
