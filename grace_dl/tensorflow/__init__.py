"""``grace_dl.tensorflow``: GRACE's Horovod-TensorFlow flavour, served by deepreduce.

The classes are deepreduce's: a communicator's ``step`` takes TensorFlow tensors (eager,
or symbolic inside a ``tf.function``) and crosses into the C core through
``tf.numpy_function`` (``deepreduce.tensorflow``). ``grace_dl.tensorflow.compressor.<name>``,
``.memory.<name>`` and ``.communicator.<name>`` resolve to deepreduce's modules, with
GRACE's TensorFlow names and constructors where they differ (``u8bit``:
``U8bitCompressor``; ``inceptionn``: ``INCEPTIONNCompressor(error_bound)``; ``powersgd``:
``PowerSGDCompressor(momentum_factor, world_size)``). Importing this package does not
import TensorFlow; the first TensorFlow tensor a communicator sees does.
"""
from deepreduce.base import Communicator, Compressor, Memory

from .._aliases import register

__all__ = ["Communicator", "Compressor", "Memory"]

register({
    "grace_dl.tensorflow.compressor": "deepreduce.compressors",
    "grace_dl.tensorflow.memory": "deepreduce.memories",
    "grace_dl.tensorflow.communicator": "deepreduce.communicators",
}, {  # GRACE's TensorFlow module names that differ from deepreduce's
    "grace_dl.tensorflow.compressor.u8bit": "deepreduce.compressors.eightbit",
    "grace_dl.tensorflow.compressor.powersgd": "grace_dl.tensorflow._powersgd",
})
