"""TensorFlow 2 integration: GRACE's TensorFlow flavour and Horovod's call shapes on the
C core. Importing this subpackage needs TensorFlow (``pip install 'deepreduce[tensorflow]'``);
nothing else in deepreduce imports it.

A TensorFlow tensor given to ``grc.step`` (eager, or symbolic inside a ``tf.function``)
crosses into NumPy through one ``tf.numpy_function`` (``crossing``). ``horovod`` gives
``horovod.tensorflow``'s call shapes (``DistributedGradientTape(tape, grace=grc)``), and
``horovod.keras`` those of ``horovod.tensorflow.keras`` (``DistributedOptimizer(opt,
grace=grc)`` and the callbacks), over our transports: see docs/tensorflow.md.
"""
try:
    import tensorflow  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without TensorFlow
    raise ImportError("deepreduce.tensorflow needs TensorFlow: pip install 'deepreduce[tensorflow]'") from exc

from .crossing import numpy_call, step_tensorflow

__all__ = ["numpy_call", "step_tensorflow"]
