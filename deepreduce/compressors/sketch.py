from .._native import f32, lib, workspace
from ._framed import FramedCompressor, framed


class SketchCompressor(FramedCompressor):
    """Quantile sketch: ``quantum_num`` bins with edges at quantiles of the values; each
    entry sends its bin index, and decodes to its bin's mean."""

    decoder = "dr_sketch_decode"

    def __init__(self, bins=127):
        super().__init__()
        if not 1 <= int(bins) <= lib.DR_SKETCH_MAX_BINS:
            raise ValueError(f"quantum_num (bins) must be in [1, {lib.DR_SKETCH_MAX_BINS}], got {bins!r}")
        self.bins = int(bins)

    @classmethod
    def from_params(cls, params):
        return cls(params["quantum_num"])

    def encode(self, flat, name):
        key = self.keys.next(name)
        _, work = workspace(lib.dr_sketch_workspace_size(flat.size, self.bins))
        return framed(lib.dr_sketch_size(flat.size, self.bins),
                      lambda buf, cap, w: lib.dr_sketch_encode(f32(flat), flat.size, self.bins, key,
                                                               lib.DR_DTYPE_FLOAT32, work, buf, cap, w),
                      f"sketch of {name!r}")
