from .residual import ResidualMemory


class PowerSGDMemory(ResidualMemory):
    """PowerSGD's error feedback: the residual of the low-rank approximation is added to
    the next gradient. (Its warm start, reusing Q, lives in the compressor, which is told
    to keep Q when this memory is chosen.) Vectors are sent exactly: their residual is 0."""

    def __init__(self, q_memory=None, compress_rank=1):
        super().__init__()
        self.q_memory = q_memory if q_memory is not None else {}
        self.compress_rank = compress_rank

    @classmethod
    def from_params(cls, params, compressor):
        return cls(getattr(compressor, "q_memory", None), params["compress_rank"])
