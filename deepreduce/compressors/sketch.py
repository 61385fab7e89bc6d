from .._native import lib
from ._framed import FramedCompressor
from ..checks import integer


class SketchCompressor(FramedCompressor):
    """Quantile sketch: ``quantum_num`` bins with edges at quantiles of the values; each
    entry sends its bin index, and decodes to its bin's mean."""

    frame_kind = "DR_KIND_SKETCH"
    encoder, size, decoder = "dr_sketch_encode", "dr_sketch_size", "dr_sketch_decode"
    label = "sketch"
    params = ("bins",)
    stochastic = True
    scratch = "dr_sketch_workspace_size"
    refuses_nonfinite = True  # an Inf or a NaN makes its bin's mean non-finite (DR_E_NUMERIC)

    DEFAULT_BINS = 127

    def __init__(self, bins=DEFAULT_BINS, quantiles=None):
        """``quantiles``: GRACE's TensorFlow name for the bins, as its helper passes them
        (``SketchCompressor(quantiles=64)``)."""
        super().__init__()
        what = "quantum_num (bins)"
        if quantiles is not None:
            if bins not in (self.DEFAULT_BINS, quantiles):
                raise ValueError(f"quantum_num={bins!r} and quantiles={quantiles!r} were both given: they are "
                                 "one setting (quantiles is GRACE TensorFlow's name for it); pass one")
            bins, what = quantiles, "quantiles"
        self.bins = integer(bins, what, 1, lib.DR_SKETCH_MAX_BINS)

    @classmethod
    def from_params(cls, params):
        return cls(params["quantum_num"], quantiles=params.get("quantiles"))
