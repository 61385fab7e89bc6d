"""The one place the training job reads communication accounting from ``deepreduce.stats``."""


def read_totals():
    """This process's running totals: bytes_sent, dense_bytes, encode_seconds, decode_seconds.

    The loop takes differences between two reads, so earlier runs in the same process (the
    dense baseline) do not leak into later ones."""
    from deepreduce import stats
    t = stats.GLOBAL.totals()
    return {k: t[k] for k in ("bytes_sent", "dense_bytes", "encode_seconds", "decode_seconds")}
