from ..checks import number
from .residual import ResidualMemory


class EFSignSGDMemory(ResidualMemory):
    """EF-SignSGD's error feedback (Karimireddy et al. 2019): x = e + lr·g is compressed
    and e = x − D(C(x)) kept: a residual memory with γ = lr."""

    def __init__(self, lr):
        lr = number(lr, "lr", 0.0, low_open=True)  # γ: a string or NaN would fail only at the first step
        super().__init__(beta=1.0, gamma=lr)
        self.learning_rate = lr

    @classmethod
    def from_params(cls, params, compressor):
        return cls(params["lr"])
