"""DeepReduce Fig. 8 through the public API: one d = 36,864 gradient (a ResNet-20 layer,
3x3x64x64; Laplace values, seed 0), top-1% (r = 368). For every index codec x value codec:
bytes of each section, the codec total relative to dense float32, the frame's own
overhead (header + CRC, which the paper's figures leave out), and encode / decode time
(encode includes the top-k selection; best of --repeat).

    python benchmarks/fig8.py               # Fig. 8 and the full codec grid
    python benchmarks/fig8.py --fpr-sweep   # bloom policies, BF-Naive included, across fpr (Figs. 4, 15, 17)
    python benchmarks/fig8.py --value-fits  # Fit-Poly, polyfit_cpu, Fit-DExp: bytes and error, 5 gradients
    python benchmarks/fig8.py --skcompress  # SKCompress across num_quantiles: bytes and error, 5 gradients
    python benchmarks/fig8.py --residual-growth  # error feedback through each bloom policy, BF-Naive's blow-up
"""
import argparse
import time

import numpy as np

from deepreduce import DeepReduce, IndexCompressor, ValueCompressor, grace_from_params
from deepreduce.wrappers import section_bytes

D = 36_864
RATIO = 0.01
INDEX = ["raw", "bloom", "rle", "huffman", "ef", "rice", "varint", "skcompress"]
VALUE = ["raw", "polyfit", "polyfit_cpu", "dexp", "deflate", "qsgd", "fp16", "bf16", "sketch", "skcompress"]
POLICIES = ["naive", "leftmost", "random", "p0", "conflict_sets"]


def gradient(seed=0):
    return np.random.default_rng(seed).laplace(size=D).astype(np.float32)


def wrapper(index, value, **extra):
    # Fig. 8 times the bloom codec with policy P2 (conflict sets), as the paper does.
    params = dict({"compressor": "topk", "compress_ratio": RATIO, "index": index, "value": value, "fpr": 1e-3,
                   "policy": "conflict_sets"}, **extra)
    cls = ValueCompressor if index == "raw" else IndexCompressor if value == "raw" else DeepReduce
    return cls(grace_from_params(params).compressor, params)


def best_seconds(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(w, g, repeat):
    tensors, ctx = w.compress(g, "conv")
    w.decompress(tensors, ctx)
    enc = best_seconds(lambda: w.compress(g, "conv"), repeat)
    dec = best_seconds(lambda: w.decompress(tensors, ctx), repeat)
    return section_bytes(tensors[0]), enc, dec


def pct(nbytes):
    return 100.0 * nbytes / (4 * D)


PAPER = {("raw", "raw"): "2.00%", ("bloom", "raw"): "idx 0.449% (662 B)", ("raw", "qsgd"): "val 0.252% (372 B)",
         ("raw", "polyfit"): "val 0.17% (~251 B)", ("bloom", "polyfit"): "+ 9-bit perm (414 B)",
         ("raw", "dexp"): "val 20-32 B", ("bloom", "dexp"): "+ perm with signs (460 B)",
         ("skcompress", "skcompress"): "SKCompress 0.34%"}


def fig8(repeat):
    g = gradient()
    print(f"Fig. 8: d={D}, r={int(D * RATIO)} (top-1%), fpr=1e-3, bloom policy P2 (conflict sets); "
          f"% of dense float32 ({4 * D} B)")
    head = f"{'index':>10} {'value':>11} | {'index B':>15} {'value B':>15} {'perm B':>6} | {'codec B':>15} " \
           f"| {'frame+':>6} | {'enc us':>6} {'dec us':>6} | paper"
    print(head)
    print("-" * len(head))
    for index in INDEX:
        for value in VALUE:
            (ib, vb, pb, overhead), enc, dec = measure(wrapper(index, value), g, repeat)
            codec = ib + vb + pb
            print(f"{index:>10} {value:>11} | {ib:5d} ({pct(ib):6.3f}%) {vb:5d} ({pct(vb):6.3f}%) {pb:6d} | "
                  f"{codec:5d} ({pct(codec):6.3f}%) | {overhead:6d} | {1e6 * enc:6.0f} {1e6 * dec:6.0f} | "
                  f"{PAPER.get((index, value), '')}")


FPRS = (1e-3, 2e-3, 5e-3, 1e-2, 2e-2)


def bloom_row(fpr, policy, seeds=5, value="qsgd"):
    """One bloom policy at one fpr, means over `seeds` gradients: filter bytes, entries
    rebuilt, false positives kept, true indices missed, the energy sent relative to the exact
    top-r tensor's (false positives carry their true values, so p0 exceeds 1), the relative
    error |sent - top-r| / |top-r|, and the volume (% of dense) with raw and with `value`
    values."""
    r = int(D * RATIO)
    rows = []
    for seed in range(seeds):
        g = gradient(seed)
        exact = np.zeros_like(g)
        true = np.sort(np.argsort(-np.abs(g), kind="stable")[:r])
        exact[true] = g[true]
        w = wrapper("bloom", "raw", fpr=fpr, policy=policy)
        tensors, ctx = w.compress(g, "conv")
        out = w.decompress(tensors, ctx)
        ib, vb, _, _ = section_bytes(tensors[0])
        both, _ = wrapper("bloom", value, fpr=fpr, policy=policy).compress(g, "conv")
        # The entries the receiver rebuilds (naive: leftmost's, not the ones whose values were sent).
        rebuilt = np.flatnonzero(out)
        kept = np.isin(rebuilt, true)
        rows.append((ib, rebuilt.size, np.count_nonzero(~kept), r - np.count_nonzero(kept),
                     float(out @ out) / float(exact @ exact), float(np.linalg.norm(out - exact) / np.linalg.norm(exact)),
                     pct(ib + vb), pct(sum(section_bytes(both[0])[:3]))))
    keys = ("filter_bytes", "count", "fp_kept", "missed", "energy", "error", "raw_pct", "value_pct")
    return dict(zip(keys, np.mean(rows, axis=0).tolist()))


def residual_growth(policy, steps=50, fpr=1e-3):
    """The largest |residual| / |gradient| over `steps` steps of error feedback (residual
    memory) through the bloom index with `policy`, on fresh Laplace gradients each step
    (seeds 0..steps-1). A policy whose rebuilt tensor errs by less than the entries it drops
    settles near a few gradient norms; BF-naive's shifted values put entries of the
    size of the largest on the wrong indices, the residual takes them back, and the
    next selection picks them: the norm grows without bound."""
    from deepreduce import deepreduce_from_params
    grc = deepreduce_from_params({"compressor": "topk", "memory": "residual", "communicator": "allgather",
                                  "compress_ratio": RATIO, "deepreduce": "index", "index": "bloom", "fpr": fpr,
                                  "policy": policy, "transport": "local"})
    peak = 0.0
    for step in range(steps):
        g = gradient(step)
        x = grc.memory.compensate(g, "conv")
        tensors, ctx = grc.compressor.compress(x, "conv")
        grc.memory.update(x, "conv", grc.compressor, tensors, ctx)
        peak = max(peak, float(np.linalg.norm(grc.memory.residuals["conv"]) / np.linalg.norm(g)))
    return peak


def fpr_sweep(seeds=5, fprs=FPRS):
    """Bloom policies across fpr (Fig. 15's volume side, and Figs. 4/17's error: BF-Naive's
    shifted values show there): bloom_row for each fpr and policy."""
    r = int(D * RATIO)
    print(f"Bloom filter index, d={D}, r={r}; means over {seeds} gradients")
    head = f"{'fpr':>6} {'policy':>13} | {'filter B':>8} {'count':>6} {'FP kept':>7} {'missed':>6} {'energy':>7} " \
           f"{'error':>6} | {'idx+raw %':>9} {'idx+qsgd %':>10}"
    print(head)
    print("-" * len(head))
    for fpr in fprs:
        for policy in POLICIES:
            row = bloom_row(fpr, policy, seeds)
            print(f"{fpr:6.3f} {policy:>13} | {row['filter_bytes']:8.0f} {row['count']:6.1f} {row['fp_kept']:7.1f} "
                  f"{row['missed']:6.1f} {row['energy']:7.3f} {row['error']:6.3f} | {row['raw_pct']:8.3f}% "
                  f"{row['value_pct']:9.3f}%")


def value_fits(seeds=5):
    """The fitting value codecs on the Fig. 8 layer for several gradients: value bytes
    and the relative L2 error of the decoded top-r tensor (the index side is raw)."""
    r = int(D * RATIO)
    codecs = ("polyfit", "polyfit_cpu", "dexp")
    print(f"Fitting value codecs, d={D}, r={r}: value bytes and relative L2 error against the top-r tensor")
    head = f"{'seed':>4} | " + " | ".join(f"{name:>18}" for name in codecs)
    print(head)
    print("-" * len(head))
    for seed in range(seeds):
        g = gradient(seed)
        cells = []
        for name in codecs:
            sections, err = rel_error_to_top_r(wrapper("raw", name), g)
            cells.append(f"{sections[1]:5d} B  err {err:.4f}")
        print(f"{seed:>4} | " + " | ".join(f"{c:>18}" for c in cells))


def rel_error_to_top_r(w, g):
    """(sections of w's frame for g, relative L2 error of the decoded tensor against the
    exact top-r tensor)."""
    r = int(D * RATIO)
    exact = np.zeros_like(g)
    true = np.argsort(-np.abs(g), kind="stable")[:r]
    exact[true] = g[true]
    tensors, ctx = w.compress(g, "conv")
    err = np.linalg.norm(w.decompress(tensors, ctx) - exact) / np.linalg.norm(exact)
    return section_bytes(tensors[0]), float(err)


SKCOMPRESS_QUANTILES = (2, 4, 8, 16, 128)


def skcompress_sweep(seeds=5):
    """SKCompress ({'index': 'skcompress', 'value': 'skcompress'}) across num_quantiles on
    the Fig. 8 layer: key and value bytes, total % of dense, and the relative L2 error of
    the decoded top-r tensor; SketchML's plain sketch (quantum_num 127) beside them."""
    print(f"SKCompress, d={D}, r={int(D * RATIO)}: bytes (mean over {seeds} gradients) and relative L2 error "
          f"against the top-r tensor (mean, max)")
    head = f"{'values':>22} | {'key B':>6} {'value B':>7} {'total %':>7} | {'error':>6} {'max':>6}"
    print(head)
    print("-" * len(head))
    rows = [(f"skcompress, {q:>3} bins", "skcompress", {"num_quantiles": q}) for q in SKCOMPRESS_QUANTILES]
    rows.append(("sketch, 127 bins", "sketch", {"quantum_num": 127}))
    for label, value, extra in rows:
        w = wrapper("skcompress", value, **extra)
        measured = [rel_error_to_top_r(w, gradient(seed)) for seed in range(seeds)]
        keys = np.mean([m[0][0] for m in measured])
        vals = np.mean([m[0][1] for m in measured])
        errs = [m[1] for m in measured]
        print(f"{label:>22} | {keys:6.1f} {vals:7.1f} {pct(keys + vals):6.3f}% | {np.mean(errs):6.4f} {max(errs):6.4f}")


def residual_growth_table(steps=(5, 10, 20, 50)):
    """residual_growth for every bloom policy after several step counts."""
    print(f"Error feedback through the bloom index, d={D}, r={int(D * RATIO)}, fpr 1e-3: the largest "
          f"|residual| / |gradient| over the first n steps (fresh Laplace gradients each step)")
    head = f"{'policy':>13} | " + " ".join(f"{f'n={n}':>9}" for n in steps)
    print(head)
    print("-" * len(head))
    for policy in POLICIES:
        print(f"{policy:>13} | " + " ".join(f"{residual_growth(policy, n):9.1f}" for n in steps))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fpr-sweep", action="store_true", help="bloom policies across fpr instead of Fig. 8")
    parser.add_argument("--value-fits", action="store_true", help="Fit-Poly, polyfit_cpu and Fit-DExp bytes and error")
    parser.add_argument("--skcompress", action="store_true", help="SKCompress across num_quantiles: bytes, error")
    parser.add_argument("--residual-growth", action="store_true",
                        help="error feedback through each bloom policy (BF-Naive's residual blows up)")
    parser.add_argument("--repeat", type=int, default=20, help="timing repeats (best is kept)")
    args = parser.parse_args()
    if args.fpr_sweep:
        fpr_sweep()
    elif args.value_fits:
        value_fits()
    elif args.skcompress:
        skcompress_sweep()
    elif args.residual_growth:
        residual_growth_table()
    else:
        fig8(args.repeat)


if __name__ == "__main__":
    main()
