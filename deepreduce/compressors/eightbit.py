from ._framed import FramedCompressor


class EightBitCompressor(FramedCompressor):
    """Dettmers' 8-bit approximation (2016): values scaled by max|g| and coded as a sign
    and one of 128 fixed magnitudes, one byte per entry plus the scale."""

    frame_kind = "DR_KIND_EIGHTBIT"
    refuses_nonfinite = True
    encoder, size, decoder = "dr_eightbit_encode", "dr_eightbit_size", "dr_eightbit_decode"
    label = "8bit"


U8bitCompressor = EightBitCompressor  # GRACE's TensorFlow name (module grace_dl.tensorflow.compressor.u8bit)
