import numpy as np

from .._native import check, f32, lib
from ._framed import FramedCompressor, framed, sign_vote


class SignumCompressor(FramedCompressor):
    """Signum (Bernstein et al. 2018): the sign of the momentum m = (1−β)·g + β·m (m = g
    at the first call), one bit per entry, aggregated by majority vote."""

    decoder = "dr_signum_decode"

    def __init__(self, momentum=0.9):
        super().__init__(average=False)
        self.momentum = float(momentum)
        self.momenta = {}

    @classmethod
    def from_params(cls, params):
        return cls(params["momentum"])

    def encode(self, flat, name):
        m = self.momenta.get(name)
        first = m is None or m.size != flat.size
        if first:
            m = self.momenta[name] = np.empty_like(flat)
        check(lib.dr_signum_momentum(f32(m), f32(flat), flat.size, self.momentum, int(first)), f"signum of {name!r}")
        return framed(lib.dr_signum_size(flat.size),
                      lambda buf, cap, w: lib.dr_signum_encode(f32(m), flat.size, lib.DR_DTYPE_FLOAT32, buf, cap, w),
                      f"signum of {name!r}")

    def aggregate(self, tensors):
        return sign_vote(tensors)
