"""The process world behind our Horovod call shapes (``deepreduce.torch.horovod``,
``deepreduce.tensorflow.horovod``): ``init()`` binds one transport for the process and
``size()``, ``rank()``, ``local_rank()``, ``local_size()`` answer from it.

``init()`` takes, in order: a torch.distributed process group the program already
initialised; an MPI job (started by mpirun or another PMI launcher) through mpi4py; a
torchrun-style environment (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``),
for which it initialises a gloo process group; else a world of one process. Once the
launcher's engine is started, the choice is ``transports.resolve``'s, the one the
communicators built by ``grace_from_params`` make on their own: so an environment that
names a larger world (``WORLD_SIZE=4``) without the means to join it is refused with a
CommunicationError, never run as a world of one.
"""
import atexit
import os

from .transports import Transport, _torch_initialised, resolve
from .transports.mpi import import_mpi

_LOCAL_RANK_ENV = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
_LOCAL_SIZE_ENV = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")
_MPI_LAUNCHER_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")
_TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


class World:
    """One process's place in the job: its transport and the launcher's local numbering."""

    def __init__(self, transport):
        if not isinstance(transport, Transport):
            raise TypeError(f"World needs a Transport, got {type(transport).__name__}")
        self.transport = transport

    @property
    def size(self):
        return self.transport.size

    @property
    def rank(self):
        return self.transport.rank

    def _env(self, names, default):
        for name in names:
            if os.environ.get(name, "").isdigit():
                return int(os.environ[name])
        return default

    @property
    def local_rank(self):
        """The launcher's local rank; on one host (no launcher says otherwise) the rank."""
        return self._env(_LOCAL_RANK_ENV, self.rank)

    @property
    def local_size(self):
        return self._env(_LOCAL_SIZE_ENV, self.size)


def discover():
    """The transport of the job this process was started in (see the module's docstring).
    What a launcher asks for is started here (MPI under an MPI launcher, a gloo group under
    a torchrun-style environment); which engine then runs is ``transports.resolve``'s
    choice, the same the communicators make."""
    if not _torch_initialised():
        if any(name in os.environ for name in _MPI_LAUNCHER_ENV):
            import_mpi()
        elif all(os.environ.get(name) for name in _TORCHRUN_ENV):
            import torch.distributed as dist
            dist.init_process_group("gloo", init_method="env://")
            atexit.register(_leave_group)
    return resolve()


def _leave_group():
    """At exit, take down the process group init() started, once every rank is there: a
    gloo group left to the interpreter's teardown was seen to abort a finished worker
    ("terminate called without an active exception": its threads destroyed while joinable)."""
    import torch.distributed as dist
    if not dist.is_initialized():
        return
    try:
        dist.barrier()
    except RuntimeError:  # a peer is gone already: nothing left to wait for
        pass
    dist.destroy_process_group()


# Horovod keeps one state per process whatever the framework: so do we. Bound by init().
_CURRENT = {"world": None}


def init(transport=None):
    """Horovod's ``hvd.init()``: bind this process's World (again: a no-op). ``transport``:
    a Transport to use instead of discovering one."""
    if _CURRENT["world"] is None:
        _CURRENT["world"] = World(transport if transport is not None else discover())


def current():
    """The World ``init()`` bound."""
    if _CURRENT["world"] is None:
        raise ValueError("deepreduce's Horovod call shapes are not initialized: call hvd.init() first")
    return _CURRENT["world"]


def is_initialized():
    return _CURRENT["world"] is not None


def shutdown():
    """Forget the World (a later init() discovers it again)."""
    _CURRENT["world"] = None


def size():
    return current().size


def rank():
    return current().rank


def local_rank():
    return current().local_rank


def local_size():
    return current().local_size
