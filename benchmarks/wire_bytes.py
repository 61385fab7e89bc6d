"""Bytes on the wire per GRACE method for one ResNet-50-sized gradient.

    python benchmarks/wire_bytes.py [--numel 25557032] [--ratio 0.01]

For every compressor: the payload bytes one rank sends for one step, that volume relative
to dense float32, encode and decode time (one core), and beside it the volume GRACE's
own implementation sends for the same method (from its code: e.g. a uint8 per sign, int32
indices) so the two can be compared. GRACE's published measurements are in docs/grace.md.
"""
import argparse
import time

import numpy as np

from deepreduce import grace_from_params
from deepreduce.registry import COMPRESSOR_ALIASES, COMPRESSORS

# Bytes GRACE's torch.distributed implementation puts on the wire for n float32 values
# (read off its compressors; r = k selected entries).
GRACE_BYTES = {
    "none": lambda n, k: 4 * n,
    "fp16": lambda n, k: 2 * n,
    "qsgd": lambda n, k: n + 4 * -(-n // 128),         # int8 levels + a norm per bucket
    "terngrad": lambda n, k: n + 4,                    # uint8 per entry + scalar
    "onebit": lambda n, k: n + 8,                      # uint8 mask + two means
    "signsgd": lambda n, k: n,                         # uint8 per sign
    "signum": lambda n, k: n,
    "efsignsgd": lambda n, k: n + 4,
    "natural": lambda n, k: n,                         # one byte per entry
    "randomk": lambda n, k: 4 * k,                     # values only
    "topk": lambda n, k: 8 * k,                        # float32 values + int32 indices
    "threshold": None,
    "dgc": lambda n, k: 8 * k,                         # ~k entries, values + int32 indices
    "powersgd": None,
}


def gradient(numel, seed=0):
    """A gradient-like vector: heavy-tailed (Laplace) values."""
    return np.random.default_rng(seed).laplace(scale=1e-3, size=numel).astype(np.float32)


def measure(name, grad, ratio):
    params = {"compressor": name, "compress_ratio": ratio, "threshold": 3e-3, "world_size": 1}
    if name == "powersgd":
        grad = grad[: (grad.size // 2048) * 2048].reshape(2048, -1)
    grc = grace_from_params(params)
    codec = grc.compressor
    start = time.perf_counter()
    tensors, ctx = codec.compress(grad, "layer")
    encode = time.perf_counter() - start
    start = time.perf_counter()
    codec.decompress(tensors, ctx)
    decode = time.perf_counter() - start
    return codec.wire_bytes(tensors, ctx), encode, decode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--numel", type=int, default=25_557_032, help="gradient size (default: ResNet-50's)")
    parser.add_argument("--ratio", type=float, default=0.01, help="compress_ratio for the sparsifiers")
    args = parser.parse_args(argv)
    grad = gradient(args.numel)
    k = max(1, int(args.numel * args.ratio))
    dense = 4 * args.numel
    print(f"one gradient of {args.numel:,} float32 ({dense / 1e6:.1f} MB), compress_ratio {args.ratio}")
    print(f"{'method':<11} {'bytes':>14} {'MB':>9} {'vs dense':>9} {'GRACE MB':>9} {'encode s':>9} {'decode s':>9}")
    for name in list(COMPRESSORS) + list(COMPRESSOR_ALIASES):
        if COMPRESSORS.get(COMPRESSOR_ALIASES.get(name, name)) is None or name in COMPRESSOR_ALIASES:
            continue
        nbytes, enc, dec = measure(name, grad, args.ratio)
        grace = GRACE_BYTES.get(name)
        grace_mb = f"{grace(args.numel, k) / 1e6:9.2f}" if grace else f"{'-':>9}"
        print(f"{name:<11} {nbytes:>14,} {nbytes / 1e6:9.3f} {nbytes / dense:9.2%} {grace_mb} {enc:9.3f} {dec:9.3f}")


if __name__ == "__main__":
    main()
