"""Per-tensor state (residuals, momenta) that a skipped step can take back.

A memory's or a compressor's state for a tensor name lives in a ``TensorState``: a dict
from name to a tensor of the caller's kind and shape (a torch tensor for torch callers,
as GRACE's ``residuals`` were), so scripts that read it keep working. Each name has two
buffers used in turn: a write goes into the spare one and the one it replaces is kept,
so ``undo`` restores the previous state without copying. That is what a step whose
aggregate turned out non-finite needs (a mixed-precision loss scaler skips it, so
nothing of it may remain in any memory), on every rank, including the ranks whose own
gradient was finite. Steady state allocates nothing.

Protocol: ``settle(name)`` at the start of a step for that name (forget what could be
undone from the step before), then any number of ``write(name, ...)`` (or ``adopt``, which
takes a buffer the caller filled instead), then ``undo(name)`` if the step is rejected. A tensor the dict hands out may be written again two steps
later: callers that keep one longer should copy it.
"""
import sys
from collections import OrderedDict

import numpy as np

from . import edge
from ._native import ffi, lasting_pointer, pointer_maker, zero

_FLOAT_POINTER = ffi.typeof("float *")


class TensorState(dict):
    def __init__(self):
        super().__init__()
        self._spare = {}  # name -> the other buffer, reused by the next step's write
        self._undo = {}   # name -> the entry before this step's write (None: there was none)
        # name -> ((entry, flat, address, pointer), ...): the (at most two) buffers write
        # made for the name, with their flat float32 views and C pointers, so a step finds
        # its buffers' views by identity instead of crossing the edge again (``turn``: nor
        # makes a pointer). An entry a caller put in by hand is not among them and crosses
        # as before.
        self._made = {}

    def __reduce__(self):
        # Pickled (torch.save of a checkpoint) and copied as an OrderedDict of its entries,
        # as GRACE's dict of tensors pickled: torch.load's default (weights_only) loads
        # that class and refuses any of ours, and the C pointers kept beside the buffers
        # cannot be pickled (the spare buffers and the undo record serve only the step in
        # flight). The part that held it stores it back as a TensorState when it is
        # loaded itself (``HoldsTensorStates``), or when it is assigned there.
        return OrderedDict, (), None, None, iter(self.items())

    def settle(self, name):
        """A new step for ``name`` begins: what the last one wrote is final."""
        self._undo.pop(name, None)

    def view(self, name, size):
        """The flat float32 NumPy buffer of ``self[name]`` if it has ``size`` elements in
        memory C can write through, else None."""
        entry = self.get(name)
        view = self._flat(name, entry) if entry is not None else None
        return view if view is not None and view.size == size else None

    def _flat(self, name, entry):
        """entry's memory as a writable flat float32 view (None if it has none)."""
        for record in self._made.get(name, ()):
            if record[0] is entry and _unmoved(record):
                return record[1]
        return edge.writable_view(entry)

    def _read(self, name, size):
        """``self[name]`` as a flat float32 array to read, where C cannot write through it
        (an entry of another dtype or device, assigned by hand or from a checkpoint);
        ValueError if it does not hold ``size`` elements. Such an entry was taken for no
        entry: DGC's and signum's state then started afresh without a word, where the
        residual memory refused it."""
        flat, _ = edge.to_core(self[name], what=f"the state kept for tensor {name!r}")
        if flat.size != size:
            raise ValueError(f"tensor {name!r} has {size} elements but the state kept for it has {flat.size}; "
                             "names must be stable and unique per parameter (empty the state to start afresh)")
        return flat

    def write(self, name, restore, size):
        """``(new, old)``: the flat float32 NumPy buffer that now backs ``self[name]``
        (its contents undefined: the caller fills it) and the buffer of the entry it
        replaced (None when there was none usable). A second write in the same step
        returns this step's buffer as both."""
        if name in self._undo:
            current = self.view(name, size)
            if current is not None:
                return current, current
        old = self.view(name, size)
        if old is None and self.get(name) is not None:
            old = self._read(name, size)
        spare = self._spare.pop(name, None)
        new = self._flat(name, spare) if spare is not None else None
        if new is None or new.size != size:
            new = np.empty(size, dtype=edge.CORE_DTYPE)
            spare = restore.working(new) if restore.numel == size else restore.wrap(new)
            address = spare.data_ptr() if edge.is_torch(spare) else None
            self._made[name] = ((spare, new, address, lasting_pointer(new)),) + self._made.get(name, ())[:1]
        previous = self.get(name)
        self._undo[name] = previous
        if previous is not None:
            self._spare[name] = previous
        self[name] = spare
        return new, old

    def turn(self, name, size):
        """``settle`` and ``write`` at once, in the steady state of a name whose two
        buffers ``write`` made take turns (a residual memory's, step after step), for a
        caller that reads the entry being replaced and writes the new one in C:
        ``(new, old)``, ``float *`` to the buffer that now backs ``self[name]`` (its
        contents undefined) and to the one it replaced. None, with the step settled and
        nothing written, in any other case (a name's first steps, an entry put in by
        hand or moved with ``set_``, another size): the caller then writes as usual."""
        self._undo.pop(name, None)
        made = self._made.get(name)
        if made is None or len(made) != 2:
            return None
        entry, spare = self.get(name), self._spare.get(name)
        if entry is made[0][0] and spare is made[1][0]:
            old, new = made[0], made[1]
        elif entry is made[1][0] and spare is made[0][0]:
            old, new = made[1], made[0]
        else:
            return None
        if old[1].size != size or new[1].size != size or not (_unmoved(old) and _unmoved(new)):
            return None
        self._undo[name] = self._spare[name] = entry
        self[name] = spare
        return new[3], old[3]

    def adopt(self, name, entry, flat):
        """``write`` with a buffer the caller made: ``entry`` (a tensor of the caller's
        kind and shape, backed by ``flat``, a flat float32 array nobody else writes)
        becomes ``self[name]``, its contents the caller's. What it replaces is kept for
        ``undo`` as after a write. Returns the flat array of the buffer the state no
        longer keeps (the spare a write would have reused, or this step's own write), for
        the caller to reuse, or None."""
        if name in self._undo:  # a second write in the step: this step's buffer goes
            released = self.get(name)
        else:
            previous = self.get(name)
            self._undo[name] = previous
            released = self._spare.pop(name, None)
            if previous is not None:
                self._spare[name] = previous
        self[name] = entry
        made = self._made.get(name, ())
        address = entry.data_ptr() if edge.is_torch(entry) else None
        self._made[name] = ((entry, flat, address, lasting_pointer(flat)),) + \
            tuple(r for r in made if r[0] is not released)[:1]
        return next((r[1] for r in made if r[0] is released and released is not None), None)

    def undo(self, name):
        """Put back what ``self[name]`` was before this step's write (no-op if this
        step wrote nothing)."""
        if name not in self._undo:
            return
        before = self._undo.pop(name)
        rejected = self.pop(name, None)
        self._spare.pop(name, None)
        if before is not None:
            self[name] = before
        if rejected is not None:
            self._spare[name] = rejected

    def drop(self, name):
        """Forget ``name`` entirely."""
        self.pop(name, None)
        self._spare.pop(name, None)
        self._undo.pop(name, None)
        self._made.pop(name, None)


def _tensor_state(entries):
    """A TensorState holding ``entries`` (a mapping of name -> tensor or array)."""
    state = TensorState()
    state.update(entries)
    return state


class StateAttribute:
    """A role's attribute that holds a ``TensorState`` under GRACE's name (``residuals``,
    ``gradients``, ``momentums``), where GRACE kept a plain dict of tensors. A script may
    assign it any mapping, as it could GRACE's: ``memory.residuals = {}`` to start
    afresh, or a checkpoint's dict to resume; a TensorState holding those entries is
    stored. Reading costs nothing extra: with no ``__get__``, a read finds the
    instance's own attribute."""

    def __set_name__(self, owner, name):
        self.name = name

    def __set__(self, obj, value):
        obj.__dict__[self.name] = value if type(value) is TensorState else _tensor_state(value)


class HoldsTensorStates:
    """Mixin for a part whose state dicts are ``StateAttribute``s: unpickled or
    deep-copied, it stores each back as a TensorState (they travel as OrderedDicts, see
    ``TensorState.__reduce__``), as an assignment would."""

    def __setstate__(self, state):
        self.__dict__.update(state)
        for key, value in state.items():
            if isinstance(getattr(type(self), key, None), StateAttribute):
                setattr(self, key, value)


def _unmoved(record):
    """Whether a ``TensorState._made`` record's entry still lies on the buffer write made
    for it: a NumPy entry always; a torch entry unless ``set_`` or ``.data =`` moved it."""
    entry, _, address, _ = record
    return address is None or (entry.data_ptr() == address and entry.dtype is sys.modules["torch"].float32)


def _references(buffers, i):
    """How many references buffers[i] has, counted the way ``Outputs.take`` counts (the
    same expression, ``sys.getrefcount(buffers[i])``)."""
    return sys.getrefcount(buffers[i])


# The count of a buffer that only its pool's list refers to. Measured, not assumed: it
# depends on how the interpreter counts the references of a call's arguments.
_ONLY_THE_POOL = _references([np.empty(1, dtype=edge.CORE_DTYPE)], 0)


class Outputs:
    """Buffers per tensor name (flat, of ``dtype``: float32 unless said) that a step
    writes afresh each time: decoders' outputs, and compressors' payloads, frames and
    indices. Reused once nobody holds them: steady state allocates none (a fresh 100 MB
    array costs the kernel zeroing its pages, about as long as the decode itself).

    The contract: a result is never written while anything refers to it. Every tensor
    or array a result is handed out as (``torch.from_numpy``, a view, a reshape) keeps a
    reference to its buffer for as long as it lives, so a buffer is taken again only
    when its reference count is back to the pool's own. A caller that keeps results (a
    list, ``p.grad`` until the next backward) simply gets fresh buffers meanwhile. At
    most ``keep`` buffers per name are kept (each as large as the tensor); results made
    while all of them are held are ordinary arrays the pool forgets. Like ``TensorState``,
    a name is served by one thread at a time (the DDP hook's worker runs its buckets in
    turn).

    ``grow``: for results whose size changes from step to step (dgc's and threshold's
    frames): a buffer of at least the size serves, as a view of its first ``size``
    elements, and one too small is replaced by one a quarter larger than asked for, so
    sizes that wander around a level take fresh pages only while they climb.
    """

    def __init__(self, keep=2, dtype=edge.CORE_DTYPE, grow=False):
        self.keep = keep
        self.dtype = dtype
        self.grow = grow
        self._buffers = {}  # name -> [flat arrays this pool handed out]
        # name -> [C pointers to those arrays, in the same order; None until
        # ``take_pointed`` asks for one]: kept with the buffer, so a step makes none.
        self._pointers = {}

    def __getstate__(self):
        # Pickled and deep-copied empty: the buffers are scratch that no result depends on
        # once handed out, and the C pointers kept with them cannot be pickled.
        return {"keep": self.keep, "dtype": self.dtype, "grow": self.grow}

    def __setstate__(self, state):
        self.__init__(**state)

    def take(self, name, size):
        """A flat array of ``size`` elements that nothing else refers to (its contents
        undefined). ``name`` None (a ctx made without one): a fresh array the pool does
        not keep."""
        return self._take(name, size)[0]

    def take_pointed(self, name, size):
        """``(array, pointer)``: ``take``'s array and a C pointer to it, of the pool's dtype
        (``float *`` for float32, ``uint8_t *`` for uint8), kept with the buffer, so a step
        makes none."""
        array, slot = self._take(name, size)
        if slot < 0:  # an array the pool does not keep
            return array, pointer_maker(self.dtype)(array)
        pointers = self._pointers[name]
        pointer = pointers[slot]
        if pointer is None:
            pointer = pointers[slot] = lasting_pointer(self._buffers[name][slot])
        return array, pointer

    def _take(self, name, size):
        """``take``'s array and the slot of the kept buffer it is (or views, with ``grow``)
        in the name's lists, -1 for an array the pool does not keep: ``take_pointed``
        finds the buffer's pointer by it without a second search."""
        if name is None:
            return np.empty(size, dtype=self.dtype), -1
        buffers = self._buffers.get(name)
        if buffers is None or (buffers and not self._serves(buffers[0], size)):  # first use, or a new size
            buffers = self._buffers[name] = []
            self._pointers[name] = []
        for i in range(len(buffers)):
            # _references's count, written out: a call per buffer was a tenth of a take.
            if sys.getrefcount(buffers[i]) == _ONLY_THE_POOL:
                return (buffers[i][:size] if self.grow else buffers[i]), i
        fresh = np.empty(self._capacity(buffers, size), dtype=self.dtype)
        slot = -1
        if len(buffers) < self.keep:
            slot = len(buffers)
            buffers.append(fresh)
            self._pointers[name].append(None)
        return (fresh[:size] if self.grow else fresh), slot

    def copy_of(self, name, array):
        """A C-contiguous copy of the NumPy ``array``, in its shape: in a buffer ``take``
        gives for ``name`` where it is of the pool's dtype, else a new array."""
        if array.dtype != self.dtype:
            return array.copy()
        copy = self.take(name, array.size).reshape(array.shape)
        np.copyto(copy, array)
        return copy

    def copy_of_tensor(self, name, tensor):
        """``copy_of`` of a torch tensor that ``edge.cpu_float32_tensor`` accepts, flat, in
        a float32 pool's buffer: its bytes copied from its data pointer, so it crosses
        to NumPy neither whole (about 1 µs a tensor) nor as a view for NumPy's copy."""
        size = tensor.numel()
        copy, pointer = self.take_pointed(name, size)
        ffi.memmove(pointer, ffi.cast(_FLOAT_POINTER, tensor.data_ptr()), 4 * size)
        return copy

    def _serves(self, buffer, size):
        """Whether ``buffer`` can hold a result of ``size`` elements."""
        return buffer.size >= size if self.grow else buffer.size == size

    def _capacity(self, buffers, size):
        """The size of a new buffer for a result of ``size`` elements beside ``buffers``
        (which serve it): all of a name's buffers have the same size, so the first's
        answers for all."""
        if not self.grow:
            return size
        return buffers[0].size if buffers else size + size // 4

    def release(self, name, view):
        """Stop keeping the buffer of ``name`` whose memory ``view`` is (a flat view of
        it, same start and size): whoever holds it keeps it for good. Returns that
        buffer, or None when ``view`` is none of the name's buffers."""
        buffers = self._buffers.get(name, ())
        address = view.__array_interface__["data"][0]
        for i, buffer in enumerate(buffers):
            if buffer.size == view.size and buffer.__array_interface__["data"][0] == address:
                self._pointers[name].pop(i)
                return buffers.pop(i)
        return None

    def take_back(self, name, buffer):
        """Keep ``buffer`` (a flat float32 array of the name's size that nothing else will
        write, or None) among the name's buffers, if the pool has room for it."""
        buffers = self._buffers.get(name)
        if buffer is not None and buffers is not None and len(buffers) < self.keep and \
                (not buffers or buffers[0].size == buffer.size):
            buffers.append(buffer)
            self._pointers[name].append(None)

    def trim(self):
        """Forget buffers nothing else refers to, of the names first used earliest first,
        until they hold no more bytes than the buffers in use: a caller whose names come
        and go (SparDL's steps over changing sets of tensors) is left with no more spare
        memory than it uses, where a name's spares would otherwise stay for good."""
        free, held = [], 0
        for name, buffers in self._buffers.items():
            for i in range(len(buffers)):
                if sys.getrefcount(buffers[i]) == _ONLY_THE_POOL:  # ``_take``'s test
                    free.append((name, i, buffers[i].nbytes))
                else:
                    held += buffers[i].nbytes
        excess = sum(nbytes for _, _, nbytes in free) - held
        forget = []
        for name, i, nbytes in free:
            if excess <= 0:
                break
            forget.append((name, i))
            excess -= nbytes
        for name, i in reversed(forget):  # a name's later slots first: the earlier keep their places
            del self._buffers[name][i], self._pointers[name][i]
            if not self._buffers[name]:
                del self._buffers[name], self._pointers[name]

    def zeros(self, name, size):
        """``take``, zeroed (for ``name`` None, fresh zero pages); a float32 pool's."""
        if name is None:
            return np.zeros(size, dtype=edge.CORE_DTYPE)
        return zero(self.take(name, size))
