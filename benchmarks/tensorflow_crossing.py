"""What TensorFlow tensors pay to reach the C core through ``tf.numpy_function``.

    python benchmarks/tensorflow_crossing.py [--sizes 1000,100000,1000000] [--calls 500]

One process (world size 1, in-process transport), so no network is timed. Rows:
``tf.function of tf.identity`` is the cost of calling a function at all, ``identity`` is a bare ``tf.numpy_function(lambda a: a)`` (TensorFlow's own crossing
cost), ``numpy_call identity`` the same through deepreduce's crossing (ordering and lock
added), and the ``grc.step`` rows a whole GRACE step (top-k 1% + residual + allgather)
given a NumPy array, an eager TF tensor, and a TF tensor inside a ``tf.function``. Each
cell is the fastest and the median of --calls single calls, in µs.
"""
import argparse
import time

import numpy as np
import tensorflow as tf

from deepreduce import grace_from_params
from deepreduce.tensorflow import numpy_call

PARAMS = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.01,
          "transport": "local"}


def per_call(fn, calls):
    """(fastest, median) of ``calls`` single calls, in µs: on a shared machine the fastest
    call is the cost without contention, the median what a busy machine gives."""
    fn()  # warm up (and trace, for tf.function)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e6, float(np.median(times)) * 1e6


def rows(n, calls):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    t = tf.constant(x)
    baseline = tf.function(tf.identity)
    bare = tf.function(lambda a: tf.numpy_function(lambda v: v, [a], tf.float32))
    ours = tf.function(lambda a: numpy_call(lambda v: [v], [a], [tf.float32]))
    grc_np, grc_eager, grc_graph = (grace_from_params(PARAMS) for _ in range(3))
    in_function = tf.function(lambda a: grc_graph.step(a, "g"))
    return {
        "identity, eager": per_call(lambda: tf.numpy_function(lambda v: v, [t], tf.float32), calls),
        "tf.function of tf.identity (no crossing)": per_call(lambda: baseline(t), calls),
        "identity, tf.function": per_call(lambda: bare(t), calls),
        "numpy_call identity, tf.function": per_call(lambda: ours(t), calls),
        "grc.step, NumPy array": per_call(lambda: grc_np.step(x, "g"), calls),
        "grc.step, eager TF tensor": per_call(lambda: grc_eager.step(t, "g"), calls),
        "grc.step, TF tensor in tf.function": per_call(lambda: in_function(t), calls),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    table = {n: rows(n, args.calls) for n in sizes}
    names = list(next(iter(table.values())))
    print("| µs per call, fastest / median | " + " | ".join(f"n = {n:,}" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name in names:
        print(f"| {name} | " + " | ".join("{:,.0f} / {:,.0f}".format(*table[n][name]) for n in sizes) + " |")


if __name__ == "__main__":
    main()
