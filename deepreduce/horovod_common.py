"""What our Horovod call shapes share whatever the framework (``deepreduce.torch.horovod``,
``deepreduce.tensorflow.horovod`` and its ``keras``): the reduction op tags, Horovod's
rules for choosing the op, the tags of unnamed collectives, and the refusals of the
Horovod options we do not offer. The process world they run in is ``deepreduce.world``.
"""
import itertools

Average = "average"
Sum = "sum"
# One counter for the process, as Horovod keeps one state whatever the framework: every
# rank makes its unnamed collectives in the same order, so the order tags them alike.
_UNNAMED = itertools.count()


def collective_name(name, kind):
    """The tag of a collective: the caller's ``name``, or ``kind`` and the collective's
    place in this process's order of unnamed ones."""
    return name if name is not None else f"{kind}.noname.{next(_UNNAMED)}"


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


def refuse_unoffered(compression=None, backward_passes_per_step=1):
    """Refuse Horovod's DistributedOptimizer options that have no meaning here, saying
    what to do instead."""
    if compression is not None:
        raise ValueError("compression=hvd.Compression... is Horovod's own fp16 cast; with deepreduce pass "
                         "grace=grace_from_params({'compressor': 'fp16', ...}) instead")
    if backward_passes_per_step != 1:
        raise ValueError(f"backward_passes_per_step={backward_passes_per_step!r} is not offered: accumulate "
                         "gradients yourself and call step() once per exchange")
