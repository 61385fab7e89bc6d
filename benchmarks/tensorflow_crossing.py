"""What TensorFlow tensors pay to reach the C core through ``tf.numpy_function``.

    python benchmarks/tensorflow_crossing.py [--sizes 1000,100000,1000000] [--calls 200] [--repeat 5]

One process (world size 1, in-process transport), so no network is timed. Rows:
``tf.function of tf.identity`` is the cost of calling a function at all, ``identity`` is a bare ``tf.numpy_function(lambda a: a)`` (TensorFlow's own crossing
cost), ``numpy_call identity`` the same through deepreduce's crossing (ordering and lock
added), and the ``grc.step`` rows a whole GRACE step (top-k 1% + residual + allgather)
given a NumPy array, an eager TF tensor, and a TF tensor inside a ``tf.function``. Each
cell is the best of --repeat runs of --calls calls, in µs per call (the machine is shared:
compare rows of one run).
"""
import argparse
import time

import numpy as np
import tensorflow as tf

from deepreduce import grace_from_params
from deepreduce.tensorflow import numpy_call

PARAMS = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.01,
          "transport": "local"}


def per_call(fn, calls, repeat):
    fn()  # warm up (and trace, for tf.function)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def rows(n, calls, repeat):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    t = tf.constant(x)
    baseline = tf.function(tf.identity)
    bare = tf.function(lambda a: tf.numpy_function(lambda v: v, [a], tf.float32))
    ours = tf.function(lambda a: numpy_call(lambda v: [v], [a], [tf.float32]))
    grc_np, grc_eager, grc_graph = (grace_from_params(PARAMS) for _ in range(3))
    in_function = tf.function(lambda a: grc_graph.step(a, "g"))
    return {
        "identity, eager": per_call(lambda: tf.numpy_function(lambda v: v, [t], tf.float32), calls, repeat),
        "tf.function of tf.identity (no crossing)": per_call(lambda: baseline(t), calls, repeat),
        "identity, tf.function": per_call(lambda: bare(t), calls, repeat),
        "numpy_call identity, tf.function": per_call(lambda: ours(t), calls, repeat),
        "grc.step, NumPy array": per_call(lambda: grc_np.step(x, "g"), calls, repeat),
        "grc.step, eager TF tensor": per_call(lambda: grc_eager.step(t, "g"), calls, repeat),
        "grc.step, TF tensor in tf.function": per_call(lambda: in_function(t), calls, repeat),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    table = {n: rows(n, args.calls, args.repeat) for n in sizes}
    names = list(next(iter(table.values())))
    print("| µs per call | " + " | ".join(f"n = {n:,}" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{table[n][name]:,.1f}" for n in sizes) + " |")


if __name__ == "__main__":
    main()
