"""Transports: the engines underneath the communicators.

``resolve`` picks one: an explicit Transport object or name ('torch', 'mpi', 'local'),
else the one the program has initialised (torch.distributed first, then MPI through an
imported mpi4py), else in-process when the world has one rank.
"""
import os
import sys

from ..errors import CommunicationError
from .base import Transport, name_tag
from .local import LocalTransport

__all__ = ["Transport", "LocalTransport", "MadeAtFirstUse", "resolve", "detect_world_size", "detect_rank",
           "name_tag"]

_WORLD_SIZE_ENV = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
_RANK_ENV = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def _torch_initialised():
    if sys.modules.get("torch") is None:
        return False
    import torch.distributed as dist
    return dist.is_available() and dist.is_initialized()


def _mpi_world():
    """COMM_WORLD if the program imported mpi4py.MPI and runs with more than one rank."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return None
    return mpi.COMM_WORLD if mpi.COMM_WORLD.Get_size() > 1 else None


def _detect(torch_method, mpi_method, env_vars, alone):
    """Ask torch.distributed, then MPI (by the named methods), then the launcher's
    environment variables; ``alone`` when none of them answers."""
    if _torch_initialised():
        import torch.distributed as dist
        return getattr(dist, torch_method)()
    world = _mpi_world()
    if world is not None:
        return getattr(world, mpi_method)()
    for var in env_vars:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return alone


def detect_world_size():
    """The world size of whatever engine is running, without binding to it."""
    return _detect("get_world_size", "Get_size", _WORLD_SIZE_ENV, 1)


def detect_rank():
    """This process's rank in whatever engine is running (0 when alone)."""
    return _detect("get_rank", "Get_rank", _RANK_ENV, 0)


class MadeAtFirstUse:
    """A transport choice whose Transport is made when a part first uses it, by ``make``,
    which returns the same Transport to every part that shares the choice (so a
    communicator and its compressor and memory exchange over one connection)."""

    def make(self):
        raise NotImplementedError


def checked_choice(choice):
    """``choice`` where it names a transport (a Transport, 'torch', 'mpi', 'local', a
    MadeAtFirstUse or None: detect), else ValueError: a part checks it when built, so that
    a misspelt name fails there and not at the first step, inside a training run's
    workers."""
    if choice is None or isinstance(choice, (Transport, MadeAtFirstUse)) or \
            (isinstance(choice, str) and choice in ("torch", "mpi", "local")):
        return choice
    raise ValueError(f"transport must be a Transport or one of 'torch', 'mpi', 'local'; got {choice!r}")


def resolve(choice=None, world_size=None):
    """Return the Transport to use. ``choice``: a Transport, 'torch', 'mpi', 'local', a
    MadeAtFirstUse or None."""
    choice = checked_choice(choice)
    if isinstance(choice, Transport):
        transport = choice
    elif isinstance(choice, MadeAtFirstUse):
        transport = choice.make()
    elif choice == "torch":
        from .torch_dist import TorchTransport
        transport = TorchTransport()
    elif choice == "mpi":
        from .mpi import MPITransport
        transport = MPITransport()
    elif choice == "local":
        transport = LocalTransport()
    else:
        transport = _auto(world_size)
    if world_size is not None and world_size != transport.size:
        raise CommunicationError(
            f"params say world_size={world_size} but the {transport.kind} transport has "
            f"{transport.size} ranks; drop 'world_size' from params or fix the launch")
    return transport


def _auto(world_size):
    if _torch_initialised():
        from .torch_dist import TorchTransport
        return TorchTransport()
    world = _mpi_world()
    if world is not None:
        from .mpi import MPITransport
        return MPITransport(world)
    expected = world_size if world_size is not None else detect_world_size()
    if expected == 1:
        return LocalTransport()
    raise CommunicationError(
        f"world size is {expected} but no process group is initialised: call "
        "torch.distributed.init_process_group(...) before the first step, run under mpirun "
        "with mpi4py imported, or pass transport=... explicitly")
