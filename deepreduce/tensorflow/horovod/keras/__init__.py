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
import sys

import tensorflow as tf

from .. import (Adasum, Average, Compression, Sum, allgather, allreduce, broadcast, broadcast_variables, check_grace, init,
                is_initialized, local_rank, local_size, rank, reduce_gradients, shutdown, size)
from ....horovod_common import reduce_op, refuse_unoffered
from ...crossing import not_converted
from ....world import current
from . import callbacks

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size", "Average", "Sum",
           "Adasum", "Compression",
           "allreduce", "allgather", "broadcast", "broadcast_variables", "broadcast_global_variables",
           "DistributedOptimizer", "load_model", "callbacks"]


class _DistributedOptimizer:
    """Placed before the user's optimizer class in a subclass made for it: ``apply``
    first averages the gradients over the ranks. Keras's ``apply_gradients`` and a
    LossScaleOptimizer's ``apply`` both come through it; an override of
    ``apply_gradients`` alone was passed by both (under mixed_float16 each rank applied
    its own gradients and the replicas drifted apart)."""

    @not_converted
    def apply(self, grads, trainable_variables=None):
        if _in_xla():
            raise RuntimeError("hvd.DistributedOptimizer cannot run inside an XLA-compiled step: its gradients "
                               "cross into NumPy (tf.numpy_function); compile the model with jit_compile=False")
        if trainable_variables is None and not self.built:
            return super().apply(grads)  # Keras says what is missing
        grads = list(grads)
        variables = list(self._trainable_variables if trainable_variables is None else trainable_variables)
        gradients = reduce_gradients(grads, variables, self._deepreduce_grace, self._deepreduce_op)
        return super().apply(gradients, trainable_variables)

    def build(self, variables):
        # A LossScaleOptimizer put around this optimizer builds it from its own build(),
        # and that call is the one trace the wrapping leaves (the scaler sets nothing on
        # its inner optimizer that can be seen). Refused: it would look for an overflow in
        # this rank's gradients before they are averaged, and a rank that overflowed would
        # skip the exchange its peers wait in (they pair up a step apart, then hang).
        caller = sys._getframe(1)
        for _ in range(3):
            outer = caller.f_locals.get("self")
            if isinstance(outer, tf.keras.mixed_precision.LossScaleOptimizer) and outer is not self:
                raise ValueError(_WRAPPED_IN_A_SCALER + (
                    " (under mixed_float16 it is a LossScaleOptimizer already: the gradients would also be "
                    "unscaled twice)" if isinstance(self, tf.keras.mixed_precision.LossScaleOptimizer) else ""))
            caller = caller.f_back
            if caller is None:
                break
        return super().build(variables)


_WRAPPED_IN_A_SCALER = (
    "hvd.DistributedOptimizer cannot be wrapped in a LossScaleOptimizer: the scaler would check this rank's "
    "gradients for an overflow before they are averaged, and a rank that overflowed would skip the exchange the "
    "others wait in. Wrap the other way round, hvd.DistributedOptimizer(LossScaleOptimizer(opt)), or make it "
    "after set_global_policy('mixed_float16') (it is then the loss scaler) and pass it to compile as it is")


def _in_xla():
    from tensorflow.python.ops import control_flow_util
    return not tf.executing_eagerly() and control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def DistributedOptimizer(optimizer, grace=None, name=None, device_dense="", device_sparse="", compression=None,
                         sparse_as_dense=False, op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False, gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         process_set=None, scale_local_gradients=True):
    """GRACE's ``hvd.DistributedOptimizer(opt, grace=grc)``: ``optimizer`` itself, made
    an instance of a subclass of its class whose ``apply`` (and so ``apply_gradients``)
    first averages the gradients, through ``grace`` when given, else dense (so all its
    state stays: built slots, ``exclude_from_weight_decay``, which a copy made from its
    config lost). Under a mixed_float16 policy it is a LossScaleOptimizer made around
    ``optimizer``, as compile() would make it. Horovod's other options are taken at
    their defaults and refused otherwise."""
    refuse_unoffered(compression, backward_passes_per_step, num_groups, groups, process_set, gradient_predivide_factor)
    check_grace(grace)
    if isinstance(optimizer, _DistributedOptimizer):
        raise ValueError("this optimizer is a hvd.DistributedOptimizer already: wrap the optimizer once")
    op = reduce_op(op)
    current()  # fail here when hvd.init() was not called
    if tf.keras.mixed_precision.global_policy().name == "mixed_float16" and \
            not isinstance(optimizer, tf.keras.mixed_precision.LossScaleOptimizer):
        # compile() would wrap the optimizer in a LossScaleOptimizer, which applies the
        # inner one only where this rank's gradients are finite: averaging there, a rank
        # whose gradients overflowed would leave the others waiting in the exchange. So
        # the loss scaler is made here, and averages the scaled gradients before it
        # looks (one rank's overflow is every rank's, and every rank skips the step).
        optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer)
    # Named and placed as its class, as Horovod's: a model saved with it loads (and
    # clones) as one of the plain optimizer, where Keras found no class of that name in
    # our module; and the exchange's settings on the class, so that a copy Keras makes
    # from its config averages too.
    base = type(optimizer)
    optimizer.__class__ = type(base.__name__, (_DistributedOptimizer, base),
                               {"__module__": base.__module__, "_deepreduce_grace": grace, "_deepreduce_op": op})
    if name is not None:
        optimizer.name = name
    return optimizer


def load_model(filepath, grace=None, custom_optimizers=None, custom_objects=None, compression=None):
    """Horovod's ``hvd.load_model`` (GRACE's takes ``grace``): a model saved with a
    distributed optimizer (saved as the plain one), loaded, its optimizer made a
    DistributedOptimizer again. ``custom_optimizers``: optimizer classes of the user's
    that the file names, as Horovod takes them."""
    refuse_unoffered(compression)
    objects = dict(custom_objects or {})
    objects.update({cls.__name__: cls for cls in custom_optimizers or ()})
    model = tf.keras.models.load_model(filepath, custom_objects=objects)
    if getattr(model, "optimizer", None) is not None:
        model.optimizer = DistributedOptimizer(model.optimizer, grace=grace)  # itself, or a scaler made around it
    return model


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
