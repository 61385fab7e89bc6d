from .._native import f32, lib
from ._framed import FramedCompressor, framed


class EFSignSGDCompressor(FramedCompressor):
    """EF-SignSGD (Karimireddy et al. 2019): mean|x| times the sign bits of x, where x
    already carries the learning rate and the error feedback (pair with the efsignsgd
    memory). The aggregate is the sum divided by lr, not averaged."""

    decoder = "dr_efsignsgd_decode"

    def __init__(self, lr=0.1):
        super().__init__(average=False)
        if not lr > 0:
            raise ValueError(f"lr must be positive, got {lr!r}")
        self.learning_rate = float(lr)

    @classmethod
    def from_params(cls, params):
        return cls(params["lr"])

    def encode(self, flat, name):
        return framed(lib.dr_efsignsgd_size(flat.size),
                      lambda buf, cap, w: lib.dr_efsignsgd_encode(f32(flat), flat.size, lib.DR_DTYPE_FLOAT32, buf, cap, w),
                      f"efsignsgd of {name!r}")

    def aggregate(self, tensors):
        return sum(tensors) / self.learning_rate
