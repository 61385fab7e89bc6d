"""Start the workers and their gloo process group, under whichever launcher started us.

- torchrun: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set; each process is one worker.
- mpirun (Open MPI's OMPI_COMM_WORLD_*, or PMI_RANK/PMI_SIZE for MPICH and Intel MPI): each
  process is one worker; the gloo rendezvous address comes from MASTER_ADDR/MASTER_PORT when
  set, otherwise rank 0 picks a free port and mpi4py broadcasts it.
- neither (the embedded default): spawn ``workers`` local processes on gloo over loopback.
All three call the same ``run_worker``, so the same seed gives the same results.
"""
import contextlib
import os
import pickle
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
from datetime import timedelta

import torch.distributed as dist

from ..errors import ParameterTypeError

# A rank that waits longer than this on a peer raises instead of hanging.
TIMEOUT = timedelta(minutes=5)


TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR")


def detect():
    """'torchrun', 'mpirun' or 'spawn', from the environment the launcher left. RANK or
    WORLD_SIZE without the rest of a torchrun-style launch, outside mpirun, is a
    ValueError: it ran as a local 2-worker job, unsaid."""
    if all(k in os.environ for k in TORCHRUN_ENV):
        rank, size = (os.environ[k] for k in TORCHRUN_ENV[:2])
        port = os.environ.get("MASTER_PORT", "29500")  # torch's env:// default
        if not (rank.isdigit() and size.isdigit() and int(rank) < int(size)):
            # RANK=2 of WORLD_SIZE=2 waited out the rendezvous's 5 minutes in silence.
            raise ValueError(f"RANK={rank!r} and WORLD_SIZE={size!r}: each must be a whole number, and RANK one "
                             "of 0 .. WORLD_SIZE-1")
        if not (port.isdigit() and 0 < int(port) < 65536):  # int()'s own message named no variable
            raise ValueError(f"MASTER_PORT={port!r} must be a port number, 1 to 65535")
        return "torchrun"
    if "OMPI_COMM_WORLD_RANK" in os.environ or "PMI_RANK" in os.environ:
        return "mpirun"
    given = [k for k in TORCHRUN_ENV[:2] if k in os.environ]
    if given:
        missing = [k for k in TORCHRUN_ENV if k not in os.environ]
        raise ValueError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} set, as a torchrun-style "
                         f"launch sets them, but {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                         "not: set all of RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT on every process, or "
                         "unset them for a run on this machine")
    return "spawn"


def launched_size(workers):
    """The run's worker count: the launcher's (torchrun's WORLD_SIZE, mpirun's), else
    ``workers``, the count this process spawns."""
    mode = detect()
    if mode == "torchrun":
        return int(os.environ["WORLD_SIZE"])
    if mode == "mpirun":
        return _mpi_rank_size()[1]
    return workers


def launched_rank():
    """This process's rank where a launcher started it (torchrun's RANK, mpirun's), else
    0: the process that spawns the workers, and the one that writes the results."""
    mode = detect()
    if mode == "torchrun":
        return int(os.environ["RANK"])
    if mode == "mpirun":
        return _mpi_rank_size()[0]
    return 0


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mpi_rank_size():
    env = os.environ
    if "OMPI_COMM_WORLD_RANK" in env:
        return int(env["OMPI_COMM_WORLD_RANK"]), int(env["OMPI_COMM_WORLD_SIZE"])
    return int(env["PMI_RANK"]), int(env["PMI_SIZE"])


def _mpi_rendezvous(rank):
    """MASTER_ADDR/MASTER_PORT from the environment, or agreed on through mpi4py."""
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if addr and port:
        return addr, int(port)
    try:
        from mpi4py import MPI
    except ImportError:
        raise RuntimeError("under mpirun, set MASTER_ADDR and MASTER_PORT (e.g. mpirun -x "
                           "MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 ...) or install mpi4py "
                           "(pip install deepreduce[mpi]) so the ranks can agree on a port") \
            from None
    # Rank 0's hostname works on one host and on clusters with resolvable names.
    mine = (socket.gethostname(), _free_port()) if rank == 0 else None
    host, port = MPI.COMM_WORLD.bcast(mine, root=0)
    return ("127.0.0.1" if host == socket.gethostname() else host), port


def _run(fn, rank, world_size, init_method, args):
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size,
                            timeout=TIMEOUT)
    try:
        fn(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


class _ParentStreams:
    """The parent's stdout and stderr as they are when a worker starts. A worker forked
    from the fork server would otherwise write to the server's, which are the parent's from
    when the server started (say, a test's capture file of long ago)."""

    def __reduce__(self):
        from multiprocessing import reduction
        return _adopt_streams, (reduction.DupFd(1), reduction.DupFd(2))


def _adopt_streams(stdout, stderr):
    for target, dup in ((1, stdout), (2, stderr)):
        fd = dup.detach()
        os.dup2(fd, target)
        os.close(fd)


def _spawned(rank, world_size, port, fn, args, environ, _streams, errors, launcher):
    # Likewise the environment: the worker takes the parent's of now, as a spawned process
    # would (the C core reads DEEPREDUCE_SIMD and DEEPREDUCE_THREADS at each call).
    os.environ.clear()
    os.environ.update(environ)
    # The launcher built every params dict before it started us, and warned of a misspelt
    # key then: once, not once more per worker.
    warnings.filterwarnings("ignore", message="params key .* is not one deepreduce reads")
    threading.Thread(target=_exit_without, args=(launcher,), daemon=True).start()
    try:
        _run(fn, rank, world_size, f"tcp://127.0.0.1:{port}", args)
    except (ValueError, ParameterTypeError) as error:
        _keep_error(errors, rank, error)
        raise
    leave()


def _exit_without(launcher):
    """End this worker once the process that spawned it is gone. A launcher that is
    interrupted stops its workers itself (``spawn``); one that was killed cannot, and its
    workers (children of the fork server, not of it) trained on to the end for no one."""
    while True:
        time.sleep(1.0)
        try:
            os.kill(launcher, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:
            pass  # alive, another user's: not ours, but the pid says nothing more


def _keep_error(folder, rank, error):
    """Leave a worker's error for ``spawn`` to raise in the parent (where it pickles)."""
    try:
        with open(os.path.join(folder, f"{rank}.pickle"), "wb") as f:
            pickle.dump(error, f)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass  # the parent then raises torch's ProcessRaisedException, with the traceback


def _kept_error(folder, rank):
    """The error worker ``rank`` left (``_keep_error``), or None."""
    try:
        with open(os.path.join(folder, f"{rank}.pickle"), "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, TypeError, AttributeError):
        return None


def leave():
    """End a worker process whose work is done and whose files are written, without the
    interpreter's teardown: a worker was seen, rarely and under load, to abort there
    ("terminate called without an active exception", a native thread destroyed at exit),
    which turned a finished run into a failed one. MPI, if this process started it, is
    finalised first (mpirun counts a worker that skips it as failed)."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def launch(fn, workers, *args):
    """Run fn(rank, world_size, *args) in every worker; returns the launcher's name.

    ``workers`` counts only for the embedded launcher; under torchrun or mpirun the world is
    the one they started."""
    mode = detect()
    if mode == "torchrun":
        # env:// reuses the store torchrun's agent already serves on MASTER_PORT.
        _run(fn, int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "env://", args)
    elif mode == "mpirun":
        rank, world_size = _mpi_rank_size()
        addr, port = _mpi_rendezvous(rank)
        _run(fn, rank, world_size, f"tcp://{addr}:{port}", args)
    elif workers < 1:
        raise ValueError(f"--workers={workers} must be >= 1")
    elif workers == 1:
        _run(fn, 0, 1, f"tcp://127.0.0.1:{_free_port()}", args)  # in this process
    else:
        spawn(fn, workers, args)
    return mode


# What the fork server imports once, so that a worker forked from it starts with them:
# torch alone is ~2.5 s of CPU per fresh process, torch._dynamo (which an optimizer's
# first param group imports) ~1 s more, and the training loop's modules the rest.
PRELOAD = ["torch", "torch._dynamo", "deepreduce.train.loop", "deepreduce.fl.procs"]


def context():
    """The multiprocessing context the embedded launcher starts workers in: "forkserver"
    with PRELOAD, where the platform has it (Linux, macOS), else "spawn". A fork server
    starts once per process, so the second and later runs of a notebook or a test session
    start their workers in milliseconds; the first saves the import in all but one.
    Queues handed to workers (progress) must come from this context."""
    import torch.multiprocessing as mp
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # no effect once a fork server runs
    return ctx


@contextlib.contextmanager
def _terminate_as_exit():
    """SIGTERM raises SystemExit meanwhile, so that ``spawn`` stops its workers before
    this process ends (the default action ends it at once). Only where SIGTERM has the
    default action and this is the main thread, which alone may set a handler."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def leave_now(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, leave_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop(processes):
    """Terminate the workers still running, and wait for them (killed after 5 s)."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join()


def spawn(fn, workers, args, while_waiting=None):
    """Run fn(rank, workers, *args) in ``workers`` new processes on gloo over loopback;
    call ``while_waiting()`` every 0.1 s until they finish (e.g. to draw their progress).
    A worker's exception is raised here: a bad setting or input found in a worker (a
    ValueError or ParameterTypeError: a data file that does not load, say) as itself, so
    that the command line reports it in one line as it does the errors it finds before
    the workers start; any other as torch's ProcessRaisedException, with the worker's
    traceback."""
    import torch.multiprocessing as mp
    method = context().get_start_method()
    # the streams' unpickling in the worker puts them in place (spawn's are the parent's anyway)
    streams = _ParentStreams() if method == "forkserver" else None
    with tempfile.TemporaryDirectory(prefix="deepreduce-workers-") as errors:
        processes = mp.start_processes(_spawned, args=(workers, _free_port(), fn, args, dict(os.environ), streams,
                                                       errors, os.getpid()),
                                       nprocs=workers, join=False, start_method=method)
        try:
            with _terminate_as_exit():
                while not processes.join(timeout=0.1):
                    if while_waiting is not None:
                        while_waiting()
        except mp.ProcessRaisedException as failure:
            kept = _kept_error(errors, failure.error_index)
            if kept is None:
                raise
            raise kept from None
        finally:
            # An interrupt (Ctrl-C in Jupyter, SIGINT or SIGTERM to this process alone)
            # left the workers training to the end of the run.
            _stop(processes.processes)
    if while_waiting is not None:
        while_waiting()
