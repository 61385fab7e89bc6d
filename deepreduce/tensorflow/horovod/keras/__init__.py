"""``horovod.tensorflow.keras``'s call shapes, as GRACE's patched Horovod has them, over
our own transports: ``import deepreduce.tensorflow.horovod.keras as hvd`` in place of
``import horovod.tensorflow.keras as hvd``. ``hvd.DistributedOptimizer(opt, grace=grc)``
averages the gradients through GRACE's communicator before the wrapped optimizer applies
them; ``hvd.callbacks`` has the broadcast, metric-average and warm-up callbacks.

Keras compiles ``fit``'s training step with XLA by default (``jit_compile='auto'``), and
XLA cannot run the ``tf.numpy_function`` the gradients cross through: compile with
``jit_compile=False``, as GRACE's examples passed ``experimental_run_tf_function=False``
for the same reason (the distributed optimizer must run in the step).
"""
import tensorflow as tf

from .. import (Adasum, Average, Compression, Sum, allgather, allreduce, broadcast, broadcast_variables, init, is_initialized,
                local_rank, local_size, rank, reduce_gradients, shutdown, size)
from ....horovod_common import reduce_op, refuse_unoffered
from ....world import current
from . import callbacks

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size", "Average", "Sum",
           "Adasum", "Compression",
           "allreduce", "allgather", "broadcast", "broadcast_variables", "broadcast_global_variables",
           "DistributedOptimizer", "callbacks"]


class _DistributedOptimizer:
    """Placed before the user's optimizer class in a subclass made for it:
    ``apply_gradients`` first averages the gradients over the ranks."""

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        if _in_xla():
            raise RuntimeError("hvd.DistributedOptimizer cannot run inside an XLA-compiled step: its gradients "
                               "cross into NumPy (tf.numpy_function); compile the model with jit_compile=False")
        grads_and_vars = list(grads_and_vars)
        variables = [v for _, v in grads_and_vars]
        gradients = reduce_gradients([g for g, _ in grads_and_vars], variables, self._deepreduce_grace,
                                     self._deepreduce_op)
        return super().apply_gradients(list(zip(gradients, variables)), *args, **kwargs)


def _in_xla():
    from tensorflow.python.ops import control_flow_util
    return not tf.executing_eagerly() and control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def DistributedOptimizer(optimizer, grace=None, name=None, device_dense="", device_sparse="", compression=None,
                         sparse_as_dense=False, op=Average, **kwargs):
    """GRACE's ``hvd.DistributedOptimizer(opt, grace=grc)``: a new optimizer of the same
    class and configuration whose ``apply_gradients`` first averages the gradients,
    through ``grace`` when given, else dense."""
    refuse_unoffered(compression, kwargs.get("backward_passes_per_step", 1))
    op = reduce_op(op)
    current()  # fail here when hvd.init() was not called
    cls = type(type(optimizer).__name__, (_DistributedOptimizer, type(optimizer)), {})
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    wrapped = cls.from_config(config)
    wrapped._deepreduce_grace = grace
    wrapped._deepreduce_op = op
    return wrapped


def broadcast_global_variables(root_rank, model=None):
    """Root's weights (and the optimizer's state, once it has some) on every rank."""
    if model is None:
        raise ValueError("broadcast_global_variables needs the model (TensorFlow 2 has no global collection)")
    return broadcast_variables(_model_variables(model), root_rank)


def _model_variables(model):
    variables = list(model.variables)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        held = optimizer.variables() if callable(optimizer.variables) else optimizer.variables
        variables += list(held)
    return variables
