"""``grace_dl.torch``: GRACE's Horovod-PyTorch flavour, served by deepreduce.

The base classes are deepreduce's (every communicator has GRACE's Horovod
``send_step``/``receive_step``), and ``grace_dl.torch.compressor.<name>``,
``.memory.<name>`` and ``.communicator.<name>`` resolve to deepreduce's modules. Use them
with ``deepreduce.torch.horovod`` in place of GRACE's patched ``horovod.torch``.
"""
from deepreduce.base import Communicator, Compressor, Memory

from .._aliases import register

__all__ = ["Communicator", "Compressor", "Memory"]

register({
    "grace_dl.torch.compressor": "deepreduce.compressors",
    "grace_dl.torch.memory": "deepreduce.memories",
    "grace_dl.torch.communicator": "deepreduce.communicators",
})
