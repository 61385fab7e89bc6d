"""``grace_dl.tensorflow.compressor.powersgd``: GRACE TensorFlow's PowerSGD constructor,
``PowerSGDCompressor(momentum_factor, world_size)`` as its helper calls it, where the
torch flavour's (ours) takes the rank first. The class is deepreduce's, so the memory,
the communicators and pickles treat it as PowerSGD."""
from deepreduce.compressors import powersgd


class PowerSGDCompressor(powersgd.PowerSGDCompressor):
    """``momentum_factor`` is checked and not used (docs/tensorflow.md); ``world_size``
    as the torch flavour's (None: the transport's)."""

    def __init__(self, momentum_factor=0.9, world_size=None, rank=1, use_memory=False, transport=None):
        super().__init__(rank, use_memory, world_size, transport, momentum_factor)
