"""What our Horovod call shapes share whatever the framework (``deepreduce.torch.horovod``,
``deepreduce.tensorflow.horovod`` and its ``keras``): the reduction op tags, Horovod's
rules for choosing the op, the tags of unnamed collectives, and the refusals of the
Horovod options we do not offer, and the check that an allgather's ranks agree on what
they send. The process world they run in is ``deepreduce.world``.
"""
import itertools

import numpy as np

from .errors import CommunicationError

Average = "average"
Sum = "sum"
Adasum = "adasum"  # named, as Horovod's scripts spell it, and refused by reduce_op: it needs Horovod's core


class _Tag:
    """A named constant that prints as a script spells it."""

    def __init__(self, spelling):
        self.spelling = spelling

    def __repr__(self):
        return self.spelling


class Compression:
    """Horovod's ``hvd.Compression``: ``none``, what a script passes for no cast (the
    gradients then go as the grace params say), and ``fp16``, Horovod's own cast, which
    ``refuse_unoffered`` turns away to the fp16 compressor."""

    none = _Tag("hvd.Compression.none")
    fp16 = _Tag("hvd.Compression.fp16")

# One counter for the process, as Horovod keeps one state whatever the framework: every
# rank makes its unnamed collectives in the same order, so the order tags them alike.
_UNNAMED = itertools.count()


def collective_name(name, kind):
    """The tag of a collective: the caller's ``name``, or ``kind`` and the collective's
    place in this process's order of unnamed ones."""
    return name if name is not None else f"{kind}.noname.{next(_UNNAMED)}"


def check_allgather_layout(transport, name, dtype, shape):
    """Before an allgather concatenated along the first dimension: every rank's tensor must
    have the same dtype and the same dimensions past the first, as Horovod requires.
    The transport gathers bytes, so a rank's float64 would be read as float32 pairs and
    rows of another width cut across rows: every rank raises CommunicationError here,
    naming what each sent, instead. One small exchange of (dimensions, dtype's name,
    trailing dimensions)."""
    text = str(dtype).encode()
    layout = np.array([len(shape), len(text), *text, *shape[1:]], dtype=np.int64)
    layouts = transport.allgather(layout, f"{name}/layout")
    if any(not np.array_equal(theirs, layout) for theirs in layouts):
        sent = [_layout_text(theirs) for theirs in layouts]
        raise CommunicationError(f"allgather {name!r}: the ranks' tensors differ in dtype or in the dimensions "
                                 f"past the first ({', '.join(sent)}, by rank); Horovod's allgather needs them "
                                 "the same")


def _layout_text(layout):
    """'float32 (*, 3)' from ``check_allgather_layout``'s vector."""
    ndim, length = int(layout[0]), int(layout[1])
    dtype = bytes(int(c) for c in layout[2:2 + length]).decode(errors="replace")
    trailing = [int(d) for d in layout[2 + length:]]
    return f"{dtype} {'scalar' if ndim == 0 else '(' + ', '.join(['*'] + [str(d) for d in trailing]) + ')'}"


def reduce_op(op=None, average=None):
    """The reduction op, by Horovod's rule: ``op`` (Average when neither is given), or the
    deprecated ``average`` flag (True: Average, False: Sum); not both."""
    if average is not None:
        if op is not None:
            raise ValueError(f"op={op!r} and average={average!r} were both given: pass only op=hvd.Average "
                             "or op=hvd.Sum (average= is Horovod's deprecated spelling of the same)")
        return Average if average else Sum
    op = Average if op is None else op
    if op not in (Average, Sum):
        raise ValueError(f"op must be hvd.Average or hvd.Sum, got {op!r} (Adasum is not offered)")
    return op


def refuse_unoffered(compression=None, backward_passes_per_step=1, num_groups=0, groups=None, process_set=None,
                     gradient_predivide_factor=1.0):
    """Refuse Horovod's DistributedOptimizer options that have no meaning here, saying
    what to do instead (their defaults are taken: a script that passes them as they are
    runs)."""
    if compression is not None and compression is not Compression.none:
        raise ValueError(f"compression={compression!r}: only hvd.Compression.none (no cast) is taken; for "
                         "Horovod's fp16 cast pass grace=grace_from_params({'compressor': 'fp16', ...})")
    if backward_passes_per_step != 1:
        raise ValueError(f"backward_passes_per_step={backward_passes_per_step!r} is not offered: accumulate "
                         "gradients yourself and call step() once per exchange")
    if num_groups or groups is not None:
        raise ValueError("num_groups and groups (Horovod's grouped allreduce) are not offered: a step's "
                         "gradients are exchanged one after another, in one crossing")
    if process_set is not None:
        raise ValueError("process_set is not offered: every rank of the world takes part")
    if gradient_predivide_factor != 1.0:
        raise ValueError(f"gradient_predivide_factor={gradient_predivide_factor!r} is not offered here: the "
                         "average divides once, after the sum")
