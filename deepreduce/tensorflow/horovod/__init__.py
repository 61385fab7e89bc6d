"""``horovod.tensorflow``'s call shapes, as GRACE's patched Horovod has them, over our
own transports (MPI or torch.distributed): ``import deepreduce.tensorflow.horovod as hvd``
in place of ``import horovod.tensorflow as hvd``. ``hvd.DistributedGradientTape(tape,
grace=grc)`` averages the gradients through GRACE's communicator; ``hvd.keras`` (in place
of ``horovod.tensorflow.keras``) has the Keras optimizer and callbacks.

Every collective here is one ``tf.numpy_function`` (``deepreduce.tensorflow.crossing``),
so the functions work eagerly and inside a ``tf.function`` alike. What differs from real
Horovod, and why: docs/tensorflow.md.
"""
import numpy as np
import tensorflow as tf

from ...horovod_common import Adasum, Average, Compression, Sum, check_allgather_layout, collective_name, reduce_op, refuse_unoffered
from ...world import current, init, is_initialized, local_rank, local_size, rank, shutdown, size
from ..crossing import not_converted, numpy_call, step_tensorflow

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size",
           "Average", "Sum", "Adasum", "Compression", "allreduce", "allgather", "broadcast", "broadcast_variables",
           "DistributedGradientTape", "DistributedOptimizer", "reduce_gradients", "variable_names"]

@not_converted
def allreduce(tensor, average=None, name=None, op=None, grace=None):
    """The mean (default) or sum of ``tensor`` over ranks; with ``grace`` (GRACE's patched
    Horovod) the communicator's compressed average instead. A ``tf.IndexedSlices`` (an
    embedding's gradient) is reduced as Horovod reduces it: every rank's slices gathered
    (values divided by the size for the mean), an IndexedSlices again."""
    if grace is not None:
        if name is None:  # the communicator keeps state (residuals) per name: a fresh one per call would lose it
            raise ValueError("hvd.allreduce(..., grace=grc) needs a name= that is the same at every step "
                             "(the communicator's error feedback is kept per tensor name)")
        return step_tensorflow(grace, [tensor], [name])[0]
    op = reduce_op(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        values = allgather(tensor.values, name=None if name is None else f"{name}.values")
        indices = allgather(tensor.indices, name=None if name is None else f"{name}.indices")
        if op == Average:
            values = values / tf.cast(size(), values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    tensor = tf.convert_to_tensor(tensor)
    tag = _tag(name, "allreduce", tensor)
    # Tagged after a tensor of a graph, every trace of the function shares the tag, and a
    # rank that retraced for a shorter batch would send fewer elements under it: checked
    # at every call, as the first call of a name is.
    agree = name is None and not tf.executing_eagerly()

    def reduce(array):
        return [_reduced(array, tag, op, agree)]

    return numpy_call(reduce, [tensor], [tensor.dtype], name="deepreduce_allreduce")[0]


def _tag(name, kind, tensor):
    """The tag of a collective: ``name``; else, in a graph, one after the tensor's name in
    it, the same however often a rank retraces the function (a count of the unnamed
    collectives made would differ between a rank that retraced and one that did not, and
    their exchanges would pair up wrongly, then hang); eagerly, by their order."""
    if name is None and not tf.executing_eagerly():
        return f"{kind}.{tensor.name}"
    return collective_name(name, kind)


def _reduced(array, tag, op, agree=False):
    """``array`` summed over the ranks (averaged for op=Average: divided, or floor-divided
    for integers, as Horovod's PyTorch flavour). Floats NumPy cannot sum (bfloat16, from
    ml_dtypes) are summed as float32 and come back in their own dtype. ``agree``: the
    transport's allreduce's."""
    world = current()
    native = array.dtype.kind != "V"  # ml_dtypes' floats are NumPy "void" kinds
    work = np.array(array, dtype=None if native else np.float32, copy=True).reshape(-1)
    summed = world.transport.allreduce(work, tag, agree=agree).reshape(array.shape)
    if op == Average and world.size > 1:
        summed = summed / world.size if np.issubdtype(summed.dtype, np.floating) else summed // world.size
    return summed if native else summed.astype(array.dtype)


@not_converted
def allgather(tensor, name=None):
    """Every rank's ``tensor`` concatenated along the first dimension, in rank order."""
    tensor = tf.convert_to_tensor(tensor)
    tag = _tag(name, "allgather", tensor)

    def gather(array):
        transport = current().transport
        check_allgather_layout(transport, tag, array.dtype, array.shape)
        parts = transport.allgather(np.ascontiguousarray(array).reshape(-1), tag)
        return [np.concatenate([p.reshape((-1,) + array.shape[1:]) for p in parts]) if array.ndim
                else np.concatenate(parts)]

    rank_known = tensor.shape.rank
    shape = tf.TensorShape(None) if rank_known is None else \
        tf.TensorShape([None]).concatenate(tensor.shape[1:]) if rank_known else tf.TensorShape([None])
    return numpy_call(gather, [tensor], [tensor.dtype], name="deepreduce_allgather", shapes=[shape])[0]


@not_converted
def broadcast(tensor, root_rank, name=None):
    """Root's ``tensor`` on every rank."""
    tensor = tf.convert_to_tensor(tensor)
    return _broadcast_all([tensor], root_rank, [_tag(name, "broadcast", tensor)])[0]


def _broadcast_all(tensors, root_rank, names):
    tensors = [tf.convert_to_tensor(t) for t in tensors]

    def send(*arrays):
        transport = current().transport
        return [transport.broadcast(np.ascontiguousarray(a).reshape(-1), root_rank, n).reshape(a.shape)
                for a, n in zip(arrays, names)]

    return numpy_call(send, tensors, [t.dtype for t in tensors], name="deepreduce_broadcast")


@not_converted
def broadcast_variables(variables, root_rank):
    """Assign root's values to ``variables`` on every rank (one crossing for all); in a
    graph, the op that does it."""
    variables = list(variables)
    values = _broadcast_all([v.value() if callable(getattr(v, "value", None)) else v for v in variables],
                            root_rank, [f"broadcast_variables.{i}" for i in range(len(variables))])
    assigns = [v.assign(value) for v, value in zip(variables, values)]
    return None if tf.executing_eagerly() else tf.group(*assigns)


def variable_names(variables):
    """A name for each variable, the same on every rank and unique: its path (Keras 3)
    or name, numbered where two coincide."""
    names = [getattr(v, "path", None) or getattr(v, "name", None) or f"tensor.{i}" for i, v in enumerate(variables)]
    seen = {}
    unique = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name}#{seen[name] - 1}")
    return unique


@not_converted
def reduce_gradients(gradients, variables, grace=None, op=Average):
    """The averaged gradients (``None`` stays ``None``): through ``grace`` when given, else
    a dense mean; all of a step's gradients in one crossing, in the variables' order."""
    gradients = list(gradients)
    names = variable_names(variables)
    present = [i for i, g in enumerate(gradients) if g is not None]
    dense = [tf.convert_to_tensor(gradients[i]) for i in present]  # IndexedSlices become dense
    if grace is not None:
        reduced = step_tensorflow(grace, dense, [names[i] for i in present])
    else:
        op = reduce_op(op)

        def mean(*arrays):
            return [_reduced(a, names[i], op) for a, i in zip(arrays, present)]

        reduced = numpy_call(mean, dense, [g.dtype for g in dense], name="deepreduce_allreduce_gradients")
    out = list(gradients)
    for i, r in zip(present, reduced):
        out[i] = r
    return out


def check_grace(grace):
    """A TypeError unless ``grace`` is None or a communicator (what grace_from_params
    makes: it has ``step``); a params dict passed in its place trained dense before."""
    if grace is not None and not callable(getattr(grace, "step", None)):
        raise TypeError(f"grace must be a communicator, grace_from_params(params), or None for the dense "
                        f"average; got {type(grace).__name__}")


class DistributedGradientTape:
    """GRACE's ``hvd.DistributedGradientTape(tape, grace=grc)``: ``gradient()`` returns the
    gradients averaged over ranks. Everything else is the wrapped tape's."""

    @not_converted
    def __init__(self, gradtape, device_dense="", device_sparse="", compression=None,
                 sparse_as_dense=False, op=Average, grace=None, gradient_predivide_factor=1.0, num_groups=0,
                 groups=None, process_set=None):
        refuse_unoffered(compression, num_groups=num_groups, groups=groups, process_set=process_set,
                         gradient_predivide_factor=gradient_predivide_factor)
        check_grace(grace)
        self._tape = gradtape
        self._grace = grace
        self._op = reduce_op(op)
        current()  # fail now, not inside a traced function, when hvd.init() was not called

    @not_converted
    def __enter__(self):  # with hvd.DistributedGradientTape(tf.GradientTape()) as tape:
        self._tape.__enter__()
        return self

    @not_converted
    def __exit__(self, *exception):
        return self._tape.__exit__(*exception)

    @not_converted
    def gradient(self, target, sources, output_gradients=None, **kwargs):
        gradients = self._tape.gradient(target, sources, output_gradients=output_gradients, **kwargs)
        if isinstance(sources, dict) or not isinstance(gradients, (list, tuple)):
            raise TypeError("DistributedGradientTape.gradient takes a list of sources (e.g. "
                            "model.trainable_variables)")
        return reduce_gradients(gradients, sources, self._grace, self._op)

    def __getattr__(self, attribute):
        return getattr(self._tape, attribute)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="", device_sparse="", grace=None,
                         **kwargs):
    """Horovod's TensorFlow DistributedOptimizer for a Keras optimizer, in its order of
    arguments (GRACE's patch: ``name`` second, ``use_locking``, which TensorFlow 1's
    optimizers took and Keras's do not, and ``grace``): the same as
    ``hvd.keras.DistributedOptimizer``."""
    if not isinstance(use_locking, bool):
        raise TypeError(f"use_locking must be a bool, got {type(use_locking).__name__}")
    from .keras import DistributedOptimizer as keras_optimizer
    return keras_optimizer(optimizer, grace=grace, name=name, device_dense=device_dense, device_sparse=device_sparse,
                           **kwargs)
