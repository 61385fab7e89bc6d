"""The transport of a part that runs collectives of its own (powersgd's and lgc's
compressors), bound as a communicator binds its own: at first use, not when the part is
built, so a GRACE script may build it before ``init_process_group``."""
from ..checks import integer
from . import checked_choice, resolve


def unbound_state(part):
    """The ``__getstate__`` of a part that binds its transport at first use: its
    attributes without the transport it bound (a live connection, which does not
    pickle), so that a copy, pickled or deep-copied, binds its own at its first use as
    the original did."""
    return dict(part.__dict__, _transport=None)


class TransportAtFirstUse:
    """Mixin: ``_bind_later(choice, world_size)`` when built; ``self.transport`` is then
    ``resolve(choice, world_size)`` from its first use on (a world_size the engine
    disagrees with is refused there, with CommunicationError)."""

    def _bind_later(self, choice, world_size):
        self._transport_choice = checked_choice(choice)  # a Transport, 'torch', 'mpi', 'local' or None (detect)
        self._world_size = None if world_size is None else integer(world_size, "world_size", 1, 2 ** 31 - 1)
        self._transport = None

    __getstate__ = unbound_state

    @property
    def transport(self):
        if self._transport is None:
            self._transport = resolve(self._transport_choice, self._world_size)
        return self._transport
