"""Bytes on the wire per GRACE method for one ResNet-50-sized gradient.

    python benchmarks/wire_bytes.py [--numel 25557032] [--ratio 0.01]

For every compressor: the payload bytes one rank sends for one step, that volume relative
to dense float32, encode and decode time (one core), and beside it the volume GRACE's
own implementation sends for the same method, computed from its code (e.g. a uint8 per
sign, int32 top-k indices), not measured, so the two can be compared. See docs/grace.md.
"""
import argparse
import time

import numpy as np

from deepreduce import grace_from_params
from deepreduce.registry import COMPRESSOR_ALIASES, COMPRESSORS

# Bytes GRACE's torch.distributed implementation puts on the wire for one gradient g of
# n float32 values, read off its compressors (k = max(1, int(n * ratio)); its payload
# dtypes: uint8 per sign, int8 per level, int32 top-k indices, but int64 indices where
# dgc takes them from torch.where). None: not in GRACE's torch.distributed flavour.
GRACE_BYTES = {
    "none": lambda g, k, p: 4 * g.size,
    "fp16": lambda g, k, p: 2 * g.size,
    "qsgd": lambda g, k, p: g.size + 4 * -(-g.size // 128),    # int8 levels + a norm per bucket
    "terngrad": lambda g, k, p: g.size + 4,                    # int8 per entry + the scalar
    "onebit": lambda g, k, p: g.size + 8,                      # uint8 mask + two means
    "signsgd": lambda g, k, p: g.size,                         # uint8 per sign
    "signum": lambda g, k, p: g.size,
    "efsignsgd": lambda g, k, p: g.size + 4,                   # uint8 per sign + the mean
    "natural": lambda g, k, p: g.size,                         # one byte per entry
    "randomk": lambda g, k, p: 4 * k,                          # values only
    "topk": lambda g, k, p: 8 * k,                             # float32 values + int32 indices
    # every |g| >= min(threshold, max(g)): float32 values + int32 indices
    "threshold": lambda g, k, p: 8 * int(np.count_nonzero(np.abs(g) >= min(p["threshold"], g.max()))),
    "dgc": lambda g, k, p: 12 * k,                             # ~k entries: float32 + int64 indices
    # P (rows x r) and Q (cols x r) in float32, as ours
    "powersgd": lambda g, k, p: 4 * p["compress_rank"] * (POWERSGD_ROWS + g.size // POWERSGD_ROWS),
}
POWERSGD_ROWS = 2048  # the gradient is measured as a 2048-row matrix for powersgd


def gradient(numel, seed=0):
    """A gradient-like vector: heavy-tailed (Laplace) values."""
    return np.random.default_rng(seed).laplace(scale=1e-3, size=numel).astype(np.float32)


def params_for(name, ratio):
    return {"compressor": name, "compress_ratio": ratio, "threshold": 3e-3, "compress_rank": 1, "world_size": 1}


def measure(name, grad, ratio):
    params = params_for(name, ratio)
    if name == "powersgd":
        grad = grad[: (grad.size // POWERSGD_ROWS) * POWERSGD_ROWS].reshape(POWERSGD_ROWS, -1)
    grc = grace_from_params(params)
    codec = grc.compressor
    start = time.perf_counter()
    tensors, ctx = codec.compress(grad, "layer")
    encode = time.perf_counter() - start
    start = time.perf_counter()
    codec.decompress(tensors, ctx)
    decode = time.perf_counter() - start
    return codec.wire_bytes(tensors, ctx), encode, decode


# Compressors whose volume depends on the training stage (LGC starts dense): one gradient
# says nothing about them; docs/lgc.md has their tables.
STAGED = ("lgc",)


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
    for name in COMPRESSORS:
        # Aliases and GRACE's *_cuda names send exactly what the method they name sends.
        if COMPRESSORS[name] is None or name.endswith("_cuda"):
            continue
        if name in STAGED:
            continue
        nbytes, enc, dec = measure(name, grad, args.ratio)
        grace = GRACE_BYTES.get(name)
        grace_mb = f"{grace(grad, k, params_for(name, args.ratio)) / 1e6:9.3f}" if grace else f"{'-':>9}"
        print(f"{name:<11} {nbytes:>14,} {nbytes / 1e6:9.3f} {nbytes / dense:9.2%} {grace_mb} {enc:9.3f} {dec:9.3f}")


if __name__ == "__main__":
    main()
