import numpy as np

from .._native import check, f32, lib
from ._framed import FramedCompressor, sign_vote
from ..checks import number


class SignumCompressor(FramedCompressor):
    """Signum (Bernstein et al. 2018): the sign of the momentum m = (1−β)·g + β·m (m = g
    at the first call), one bit per entry, aggregated by majority vote."""

    encoder, size, decoder = "dr_signum_encode", "dr_signum_size", "dr_signum_decode"
    label = "signum"

    def __init__(self, momentum=0.9):
        super().__init__(average=False)
        self.momentum = number(momentum, "momentum", 0.0, 1.0)
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
        return super().encode(m, name)  # the sign frame of the momentum

    def aggregate(self, tensors):
        return sign_vote(tensors)
