from .._native import f32, lib
from ._framed import FramedCompressor
from ..checks import fraction


class AdaqCompressor(FramedCompressor):
    """AdaComp-style adaptive quantization (Chen et al. 2018): the positive and negative
    parts are each thresholded (from a sample) to about compress_ratio of the entries;
    the selected indices travel with one mean per sign: as index lists, or where smaller
    (more than about one entry in 16 selected, as at GRACE's default 0.3) as a 2-bit code
    per entry saying which sign's mean it takes. Variable size, empty is legal."""

    frame_kind = "DR_KIND_ADAQ"
    decoder = "dr_adaq_decode"
    decoder_add = "dr_adaq_decode_add"  # a sparse frame: the other ranks' add into the sum
    refuses_nonfinite = True  # its sweep counting the signs finds them (DR_E_NUMERIC)

    def __init__(self, compress_ratio=0.01):
        super().__init__(tensors_size_are_same=False)
        self.compress_ratio = fraction(compress_ratio, "compress_ratio")

    @classmethod
    def from_params(cls, params):
        return cls(params["compress_ratio"])

    def encode(self, flat, name):
        key = self.keys.next(name)
        work = self.scratch_for(lib.dr_adaq_workspace_size(flat.size))
        return self.framed(name, lib.dr_adaq_bound(flat.size),
                           lambda buf, cap, w: lib.dr_adaq_encode(f32(flat), flat.size, self.compress_ratio, key,
                                                                  lib.DR_DTYPE_FLOAT32, work, buf, cap, w),
                           f"adaq of {name!r}", self.refuses_nonfinite)
