"""``grace_dl.tensorflow.helper``: GRACE's factory for its TensorFlow flavour, with that
flavour's own keys and defaults where they differ from the torch ones: sketch reads
``quantiles`` (64), inceptionn ``error_bound`` (2e-10, i.e. values below 2^-10 dropped),
and the 8-bit quantizer is named ``u8bit``. ``momentum_factor`` (powersgd) is accepted:
our powersgd keeps no momentum of its own (docs/tensorflow.md). The world size comes
from the transport (``hvd.init()`` binds it) instead of ``hvd.size()``."""
from deepreduce.params import grace_from_params as _grace_from_params

__all__ = ["grace_from_params"]

SKETCH_QUANTILES = 64  # GRACE's TensorFlow default for sketch


def grace_from_params(params):
    """GRACE's TensorFlow ``grace_from_params``: the communicator, whose ``step`` takes
    TensorFlow tensors (see ``grace_dl.tensorflow``)."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    translated = dict(params)  # quantiles and error_bound are read by the compressors themselves
    if params.get("compressor") == "sketch" and "quantiles" not in params and "quantum_num" not in params:
        translated["quantiles"] = SKETCH_QUANTILES
    return _grace_from_params(translated)
