"""World size 1: every collective is the identity, in process."""
import numpy as np

from .base import Transport


class LocalTransport(Transport):
    kind = "local"

    def __init__(self):
        super().__init__(rank=0, size=1)

    def _allgather_int64(self, values):
        return np.asarray(values, dtype=np.int64).reshape(1, -1)

    def _allgatherv_bytes(self, data, sizes):
        return [data]

    def _broadcast_bytes(self, data, nbytes, root):
        return data[:nbytes]

    def _alltoallv_bytes(self, sends, recv_sizes):
        return list(sends)

    def _allreduce_sum_inplace(self, array):
        return array
