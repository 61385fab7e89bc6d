"""Re-derive the DeepReduce paper's figures (Kostopoulou et al., NeurIPS 2021) as printed
tables and PNG plots, each beside the paper's own values:

  Fig. 8      every bar: value / index volume and encode / decode time on one CPU core for
              one ResNet-20 layer (d = 36,864, top-1%: r = 368), reusing benchmarks/fig8.py
  Fig. 15     the bloom FPR sweep for P0, P1, P2: volume (fig8.bloom_row) and test accuracy
  Figs. 4, 17 the bloom policies (naive, P0, P1, P2) at FPR 1e-3: the error of the rebuilt
              tensor, the accuracy after each epoch (Fig. 4) and volume against accuracy (Fig. 17)
  Table 6     an inherently sparse model (NCF's NeuMF at MovieLens-20M's size): volume and time
              of the paper's codecs on the non-zero entries of its gradients

Accuracies come from benchmarks/deepreduce_accuracy.py's task (digits, 2 gloo ranks), not
ResNet-20 on CIFAR-10, so the paper's accuracies are shown for their ordering only.

Every table except the timings is a function of the seeds and versions alone: two runs
write the same docs/deepreduce/tables.txt. Timings (machine-dependent) are printed in tables
of their own and left out of tables.txt. A row whose codec is not in this build is printed
with "not built" and skipped: adding a bar is one line in a table below.

The paper's values were read from the vector drawing of deepreduce.nips21.pdf (in
github.com/hangxu0304/DeepReduce): `pdftocairo -svg` of pages 9 and 32, each bar's or
marker's coordinates mapped through the axis ticks (linear; Fig. 8b log-scale).

    python benchmarks/deepreduce_paper.py [--quick] [--only fig8,fig15,fig4_17,table6]
"""
import argparse
import math
import pathlib
import sys
from dataclasses import dataclass, field

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import deepreduce_accuracy as accuracy  # noqa: E402  (the accuracy task: digits MLP, 2 gloo ranks)
import distributed  # noqa: E402  (the tests' spawner: gloo over loopback)
import fig8  # noqa: E402

from deepreduce import deepreduce_from_params  # noqa: E402
from deepreduce.errors import UnknownNameError  # noqa: E402

OUT = HERE.parent / "docs" / "deepreduce"
NOT_BUILT = "not built"


@dataclass
class Bar:
    """One bar of Fig. 8: a DeepReduce index x value codec pair on the top-1% output
    (fig8.wrapper; extra params override its fpr 1e-3 and policy P2), and the paper's
    (value %, index %, encode ms, decode ms, device) for it."""
    label: str
    index: str
    value: str
    paper: tuple = None
    extra: dict = field(default_factory=dict)


# Fig. 8 of the paper (page 9). Index % includes the permutation that travels beside a
# reordering value codec (the paper's BF-P2 Fit-DExp index bar is bloom 0.45% + 0.28%).
FIG8_BARS = [
    Bar("Top-r", "raw", "raw", (1.00, 1.00, None, None, "")),
    Bar("DR Huffman", "huffman", "raw", (1.00, 0.62, 116.5, 134.5, "CPU")),
    Bar("DR RLE", "rle", "raw", (1.00, 0.59, 350.0, 6.92, "CPU")),
    Bar("DR BF-P2", "bloom", "raw", (1.00, 0.45, 3.97, 2.38, "GPU")),
    Bar("DR Deflate", "raw", "deflate", (0.90, 1.00, 1.09, 3.24, "CPU")),
    Bar("DR QSGD", "raw", "qsgd", (0.25, 1.00, 0.886, 0.700, "GPU")),
    # Fit-Poly with the paper's free knots (§5), and the reference's polyfit_cpu knots.
    Bar("DR Fit-Poly", "raw", "polyfit", (0.17, 1.00, 2.32, 1.71, "GPU")),
    Bar("DR Fit-Poly, polyfit_cpu", "raw", "polyfit_cpu"),
    Bar("DR Fit-DExp", "raw", "dexp", (0.02, 1.00, 10.9, 2.96, "GPU")),
    Bar("DR BF-P2 Fit-DExp", "bloom", "dexp", (0.02, 0.73, 15.4, 5.24, "GPU")),
    Bar("DR BF-P2 QSGD", "bloom", "qsgd", (0.25, 0.45, 4.98, 2.87, "GPU")),
    # SKCompress: delta-binary keys with Huffman-coded prefixes; quantile-sketch values with
    # Huffman-coded bins (num_quantiles 4, the default; 2 reach the paper's total), and
    # SketchML's plain sketch (127 bins, float32 means, a byte a value) beside them.
    Bar("SKCompress", "skcompress", "skcompress", (0.04, 0.30, 709.0, 2277.0, "CPU")),
    Bar("SKCompress, 2 quantiles", "skcompress", "skcompress", (0.04, 0.30, None, None, ""), {"num_quantiles": 2}),
    Bar("SKCompress keys + sketch", "skcompress", "sketch"),
    # Ours, beyond the paper: the lossless set codecs at the floor.
    Bar("DR rice + QSGD (ours)", "rice", "qsgd"),
    Bar("DR EF + QSGD (ours)", "ef", "qsgd"),
]

# The stand-alone comparison codecs of Fig. 16 on the same layer (dense input, one call).
STANDALONE = [
    ("3LC (s = 1)", {"compressor": "3lc", "threelc_sparsity": 1.0}),
    ("SketchML, 64 quantiles", {"compressor": "sketch", "quantum_num": 64}),
]

# Fig. 15 (page 32), Top-r markers: fpr -> (relative volume, top-1 accuracy) per policy.
FIG15_FPRS = (1e-3, 2e-3, 4e-3, 1e-2, 2e-2)
FIG15_POLICIES = (("P0", "p0"), ("P1", "random"), ("P2", "conflict_sets"))
FIG15_PAPER = {
    "P0": {2e-2: (0.03284, 0.9055), 1e-2: (0.02330, 0.9037), 4e-3: (0.01791, 0.9039),
           2e-3: (0.01636, 0.9078), 1e-3: (0.01584, 0.9060)},
    "P1": {2e-2: (0.01271, 0.8806), 1e-2: (0.01317, 0.8939), 4e-3: (0.01377, 0.8986),
           2e-3: (0.01423, 0.9002), 1e-3: (0.01469, 0.9043)},
    "P2": {2e-2: (0.01271, 0.8929), 1e-2: (0.01317, 0.9014), 4e-3: (0.01377, 0.9065),
           2e-3: (0.01423, 0.9053), 1e-3: (0.01469, 0.9055)},
    "Top-r": (0.0200, 0.9012), "Baseline": (1.0, 0.9109),
}

# Figs. 4 and 17 at FPR 1e-3: (label, policy, params beyond bloom_params). Fig. 17a
# (ResNet-20) has no naive marker; Fig. 4 only says naive "achieves much lower accuracy".
# BF-naive under the residual memory diverges (its peak residual column shows why), so it
# also runs without memory, where its shifted values only cost accuracy.
POLICY_ROWS = [("BF-naive", "naive", {}), ("BF-naive, no memory", "naive", {"memory": "none"}),
               ("BF-leftmost (ours)", "leftmost", {}), ("BF-P0", "p0", {}), ("BF-P1", "random", {}),
               ("BF-P2", "conflict_sets", {})]
# Fig. 4 (page 7): test accuracy along training, every 4th of the 41 points of each curve.
FIG4_STEPS = (0.19, 0.97, 1.75, 2.54, 3.32, 4.1, 4.88, 5.66, 6.44, 7.22, 8.0)  # thousands of steps
FIG4_PAPER = {
    "Baseline": (0.116, 0.606, 0.777, 0.828, 0.825, 0.886, 0.885, 0.883, 0.902, 0.907, 0.909),
    "Top-r": (0.099, 0.453, 0.482, 0.588, 0.701, 0.810, 0.791, 0.832, 0.885, 0.894, 0.901),
    "BF-naive": (0.098, 0.099, 0.099, 0.113, 0.128, 0.185, 0.246, 0.258, 0.402, 0.481, 0.509),
    "BF-P0": (0.117, 0.597, 0.520, 0.712, 0.785, 0.863, 0.863, 0.866, 0.897, 0.905, 0.906),
    "BF-P1": (0.100, 0.154, 0.303, 0.347, 0.292, 0.467, 0.651, 0.781, 0.860, 0.897, 0.899),
    "BF-P2": (0.102, 0.214, 0.271, 0.303, 0.593, 0.729, 0.770, 0.831, 0.873, 0.896, 0.903),
}
POLICY_COLORS = {"BF-naive": "tab:gray", "BF-naive, no memory": "tab:pink", "BF-leftmost (ours)": "tab:olive", "BF-P0": "tab:red", "BF-P1": "tab:purple",
                 "BF-P2": "tab:brown", "Top-r": "tab:orange", "Baseline": "black"}
FIG17_PAPER = {"Top-r": (0.0200, 0.9012), "BF-P0": (0.01580, 0.9068), "BF-P1": (0.01470, 0.9046),
               "BF-P2": (0.01470, 0.9055), "Baseline": (1.0, 0.9109)}

# Table 6 (page 34): NCF on ML-20m; (relative volume, best hit rate).
TABLE6 = [
    ("Baseline (dense)", {"compressor": "none"}, (1.0, 0.9497)),
    ("non-zeros, raw", {"compressor": "none", "deepreduce": "both", "index": "raw", "value": "raw"}, None),
    # The reference's SKCompressCPU run on NCF: num_quantiles 128.
    ("SKCompress", {"compressor": "none", "deepreduce": "both", "index": "skcompress", "value": "skcompress",
                    "num_quantiles": 128}, (0.2175, 0.9513)),
    ("DR QSGD BF-P0 (fpr 0.6)", {"compressor": "none", "deepreduce": "both", "index": "bloom", "policy": "p0",
                                 "fpr": 0.6, "value": "qsgd", "quantum_num": 127, "bucket_size": 512},
     (0.2063, 0.9496)),
    ("DR QSGD rice (ours)", {"compressor": "none", "deepreduce": "both", "index": "rice", "value": "qsgd",
                             "quantum_num": 127, "bucket_size": 512}, None),
]
NCF_USERS, NCF_ITEMS = 138_493, 26_744  # MovieLens-20M


class Report:
    """Tables go to stdout and, unless timing-dependent, to tables.txt."""

    def __init__(self, out):
        self.out = out
        self.lines = []

    def table(self, title, head, rows, deterministic=True):
        text = [title, head, "-" * len(head)] + rows + [""]
        print("\n".join(text), flush=True)
        if deterministic:
            self.lines += text

    def save(self):
        (self.out / "tables.txt").write_text("\n".join(self.lines))


def built(build):
    """build() or None where a codec or policy is not in this build."""
    try:
        return build()
    except UnknownNameError:
        return None


def plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    return pyplot


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    print(f"wrote {path}")


# ---------------------------------------------------------------- Fig. 8

def fig8_measure(repeat):
    g = fig8.gradient()
    rows = []
    for bar in progress(FIG8_BARS, "Fig. 8 bars"):
        w = built(lambda: fig8.wrapper(bar.index, bar.value, **bar.extra))
        if w is None:
            rows.append((bar, None))
            continue
        (ib, vb, pb, _), enc, dec = fig8.measure(w, g, repeat)
        rows.append((bar, (vb, ib + pb, enc, dec)))
    standalone = []
    for label, params in STANDALONE:
        c = one_call_compressor(params)
        if c is None:
            standalone.append((label, None, None, None))
            continue
        tensors, ctx = c.compress(g, "conv")
        enc = fig8.best_seconds(lambda: c.compress(g, "conv"), repeat)
        dec = fig8.best_seconds(lambda: c.decompress(tensors, ctx), repeat)
        standalone.append((label, sum(t.nbytes for t in tensors), enc, dec))
    return rows, standalone


def fig8_report(report, rows, standalone, repeat):
    dense = 4 * fig8.D
    head = f"{'bar':<26} | {'value B':>7} {'index B':>7} {'value %':>7} {'index %':>7} {'total %':>7} | " \
           f"{'paper val %':>11} {'paper idx %':>11} {'paper tot %':>11} | {'ours/paper':>10}"
    out = []
    for bar, m in rows:
        p = bar.paper
        paper = f"{p[0]:10.2f}% {p[1]:10.2f}% {p[0] + p[1]:10.2f}%" if p else f"{'':>11} {'':>11} {'':>11}"
        if m is None:
            out.append(f"{bar.label:<26} | {NOT_BUILT:>39} | {paper} |")
            continue
        vb, ib = m[0], m[1]
        total = 100 * (vb + ib) / dense
        ratio = f"{total / (p[0] + p[1]):10.2f}" if p else ""
        out.append(f"{bar.label:<26} | {vb:7d} {ib:7d} {100 * vb / dense:6.3f}% {100 * ib / dense:6.3f}% "
                   f"{total:6.3f}% | {paper} | {ratio}")
    for label, nbytes, _, _ in standalone:
        mine = f"{NOT_BUILT:>39}" if nbytes is None else \
            f"{nbytes:7d} {'':>7} {100 * nbytes / dense:6.3f}% {'':>7} {100 * nbytes / dense:6.3f}%"
        out.append(f"{label:<26} | {mine} | {'(Fig. 16 comparison, dense input)':>35} |")
    report.table(f"Fig. 8a: data volume, d={fig8.D}, r={int(fig8.D * fig8.RATIO)}, fpr 1e-3, bloom P2; "
                 f"% of dense float32 ({dense} B), frame header and CRC left out", head, out)

    head = f"{'bar':<26} | {'encode us':>9} {'decode us':>9} | {'paper enc ms':>12} {'paper dec ms':>12} {'on':>4}"
    out = []
    for bar, m in rows:
        p = bar.paper
        paper = f"{p[2]:12.3f} {p[3]:12.3f} {p[4]:>4}" if p and p[2] else ""
        mine = f"{1e6 * m[2]:9.0f} {1e6 * m[3]:9.0f}" if m else f"{NOT_BUILT:>19}"
        out.append(f"{bar.label:<26} | {mine} | {paper}")
    for label, nbytes, enc, dec in standalone:
        mine = f"{NOT_BUILT:>19}" if nbytes is None else f"{1e6 * enc:9.0f} {1e6 * dec:9.0f}"
        out.append(f"{label:<26} | {mine} |")
    report.table(f"Fig. 8b: encode / decode time, ours on one CPU core (best of {repeat}; encode includes the "
                 f"top-k selection) against the paper's (GPU or CPU as marked)", head, out, deterministic=False)


def fig8_plot(rows, path):
    pyplot = plt()
    dense = 4 * fig8.D
    shown = [(bar, m) for bar, m in rows if m is not None]
    labels = [bar.label for bar, _ in shown]
    x = np.arange(len(shown))
    fig, (a, b) = pyplot.subplots(1, 2, figsize=(14, 5))
    ours_v = [100 * m[0] / dense for _, m in shown]
    ours_i = [100 * m[1] / dense for _, m in shown]
    paper_v = [bar.paper[0] if bar.paper else np.nan for bar, _ in shown]
    paper_i = [bar.paper[1] if bar.paper else np.nan for bar, _ in shown]
    w = 0.38
    a.bar(x - w / 2, ours_v, w, color="#f08400", label="value (ours)")
    a.bar(x - w / 2, ours_i, w, bottom=ours_v, color="#4d5aaf", label="index (ours)")
    a.bar(x + w / 2, paper_v, w, color="#f08400", alpha=0.4, hatch="//", label="value (paper)")
    a.bar(x + w / 2, paper_i, w, bottom=paper_v, color="#4d5aaf", alpha=0.4, hatch="//", label="index (paper)")
    a.set_xticks(x, labels, rotation=60, ha="right", fontsize=8)
    a.set_ylabel("% of dense float32")
    a.set_title("(a) data volume: ours (solid) vs paper (hatched)")
    a.legend(fontsize=8)
    enc = [1e3 * m[2] for _, m in shown]
    dec = [1e3 * m[3] for _, m in shown]
    p_enc = [bar.paper[2] if bar.paper and bar.paper[2] else np.nan for bar, _ in shown]
    p_dec = [bar.paper[3] if bar.paper and bar.paper[3] else np.nan for bar, _ in shown]
    w = 0.2
    b.bar(x - 1.5 * w, enc, w, color="#ef7b3e", label="encode (ours, 1 CPU core)")
    b.bar(x - 0.5 * w, dec, w, color="#3490dd", label="decode (ours, 1 CPU core)")
    b.bar(x + 0.5 * w, p_enc, w, color="#ef7b3e", alpha=0.4, hatch="//", label="encode (paper)")
    b.bar(x + 1.5 * w, p_dec, w, color="#3490dd", alpha=0.4, hatch="//", label="decode (paper)")
    b.set_yscale("log")
    b.set_xticks(x, labels, rotation=60, ha="right", fontsize=8)
    b.set_ylabel("ms (log scale)")
    b.set_title("(b) run time (ours: this machine, varies run to run)")
    b.legend(fontsize=8)
    save(fig, path)


# ---------------------------------------------------------------- training (Figs. 15, 4, 17)

class Trainer:
    """Runs accuracy.train for a params dict on 2 gloo ranks over `seeds` seeds, once per
    distinct configuration (Figs. 15, 4 and 17 share their dense and top-k runs)."""

    def __init__(self, epochs, seeds):
        self.epochs, self.seeds = epochs, seeds
        self.done = {}

    def __call__(self, params):
        key = repr(sorted(params.items()))
        if key not in self.done:
            rank0, rank1 = distributed.run(_train_seeds, 2, params, self.epochs, self.seeds, timeout=1800)
            # repr: a diverged run (BF-Naive's) ends at NaN on both ranks, and NaN != NaN.
            assert [repr(r[:2]) for r in rank0] == [repr(r[:2]) for r in rank1], f"ranks disagree for {params}"
            self.done[key] = {"acc": float(np.mean([r[0] for r in rank0])),
                              "loss": float(np.mean([r[1] for r in rank0])),
                              "volume": float(np.mean([r[2] for r in rank0])),
                              "curve": np.mean([r[4] for r in rank0], axis=0).tolist()}
        return self.done[key]


def _train_seeds(rank, world_size, params, epochs, seeds):
    return [accuracy.train(rank, world_size, params, epochs, seed) for seed in range(seeds)]


def runnable(params):
    """params, or None where a codec or policy is not in this build (checked here, before
    spawning ranks)."""
    return params if built(lambda: deepreduce_from_params(dict(params))) is not None else None


def one_call_compressor(params):
    """The compressor params name (wrapped as they say), without memory, for measuring one
    call; None where a codec is not in this build."""
    return built(lambda: deepreduce_from_params(dict(params, memory="none", communicator="allgather")).compressor)


def bloom_params(fpr, policy):
    return dict(accuracy.BASE, compressor="topk", deepreduce="index", index="bloom", fpr=fpr, policy=policy)


# ---------------------------------------------------------------- Fig. 15

def fig15(report, trainer, seeds, path, fprs=FIG15_FPRS):
    dense, topk = trainer(accuracy.DENSE), trainer(accuracy.TOPK)
    head = f"{'policy':<6} {'fpr':>6} | {'layer vol %':>11} {'run vol %':>9} {'test acc %':>10} {'test loss':>9} | " \
           f"{'paper vol %':>11} {'paper acc %':>11}"
    out, points = [], {}
    jobs = [(name, policy, fpr) for name, policy in FIG15_POLICIES for fpr in fprs]
    for name, policy, fpr in progress(jobs, "Fig. 15 runs"):
        pv, pa = FIG15_PAPER[name][fpr]
        params = runnable(bloom_params(fpr, policy))
        if params is None:
            out.append(f"{name:<6} {fpr:6.3f} | {NOT_BUILT:>42} | {100 * pv:10.3f}% {100 * pa:10.2f}%")
            continue
        layer = fig8.bloom_row(fpr, policy, seeds)["raw_pct"]
        run = trainer(params)
        points.setdefault(name, []).append((fpr, run["volume"], run["acc"], pv, pa))
        out.append(f"{name:<6} {fpr:6.3f} | {layer:10.3f}% {100 * run['volume']:8.3f}% {100 * run['acc']:9.2f}% "
                   f"{run['loss']:9.4f} | {100 * pv:10.3f}% {100 * pa:10.2f}%")
    for label, run in (("top-k", topk), ("dense", dense)):
        paper = FIG15_PAPER["Top-r" if label == "top-k" else "Baseline"]
        out.append(f"{label:<6} {'':>6} | {'':>11} {100 * run['volume']:8.3f}% {100 * run['acc']:9.2f}% "
                   f"{run['loss']:9.4f} | {100 * paper[0]:10.3f}% {100 * paper[1]:10.2f}%")
    report.table(f"Fig. 15: bloom index ('index' mode, raw values) across fpr. layer vol: the Fig. 8 layer, "
                 f"means over {seeds} gradients; run vol / acc / loss: {TASK(trainer)}", head, out)

    pyplot = plt()
    fig, axes = pyplot.subplots(2, 3, figsize=(14, 7.5))
    for col, (name, _) in enumerate(FIG15_POLICIES):
        for row, (who, vi, ai) in enumerate((("ours: digits MLP", 1, 2), ("paper: ResNet-20, CIFAR-10", 3, 4))):
            ax = axes[row][col]
            for fpr, *vals in points.get(name, []):
                ax.scatter(100 * vals[vi - 1], 100 * vals[ai - 1], s=45, label=f"FPR={fpr:g}")
            ref = (topk["volume"], topk["acc"], dense["acc"]) if row == 0 else \
                (FIG15_PAPER["Top-r"][0], FIG15_PAPER["Top-r"][1], FIG15_PAPER["Baseline"][1])
            ax.scatter(100 * ref[0], 100 * ref[1], marker="s", facecolors="none", edgecolors="r", label="Top-r")
            ax.axhline(100 * ref[2], ls="--", c="gray", label="dense")
            ax.set_title(f"BF-{name}, {who}", fontsize=9)
            ax.set_xlabel("relative data volume %")
            ax.set_ylabel("test accuracy %")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    save(fig, path)


# ---------------------------------------------------------------- Figs. 4 and 17

def fig4_17(report, trainer, seeds, path):
    dense, topk = trainer(accuracy.DENSE), trainer(accuracy.TOPK)
    head = f"{'policy':<20} | {'FP kept':>7} {'missed':>6} {'energy':>6} {'error':>6} {'peak resid':>10} | " \
           f"{'run vol %':>9} {'test acc %':>10} {'test loss':>9} | {'paper vol %':>11} {'paper acc %':>11} " \
           f"{'Fig. 4 end %':>12}"
    out, runs = [], {}
    for label, policy, extra in progress(POLICY_ROWS, "Figs. 4/17 runs"):
        params = runnable(dict(bloom_params(1e-3, policy), **extra))
        paper_txt = paper_columns(label)
        if params is None:
            out.append(f"{label:<20} | {NOT_BUILT:>39} | {'':>30} | {paper_txt}")
            continue
        err = fig8.bloom_row(1e-3, policy, seeds)
        resid = f"{fig8.residual_growth(policy):10.1f}" if params["memory"] == "residual" else f"{'no memory':>10}"
        runs[label] = trainer(params)
        run = runs[label]
        # A run that diverged ends with NaN weights: say so rather than print nan.
        loss = f"{run['loss']:9.4f}" if math.isfinite(run["loss"]) else f"{'diverged':>9}"
        out.append(f"{label:<20} | {err['fp_kept']:7.1f} {err['missed']:6.1f} {err['energy']:6.3f} "
                   f"{err['error']:6.3f} {resid} | {100 * run['volume']:8.3f}% {100 * run['acc']:9.2f}% {loss} | "
                   f"{paper_txt}")
    for label, run in (("Top-r", topk), ("Baseline", dense)):
        out.append(f"{label:<20} | {'':>39} | {100 * run['volume']:8.3f}% {100 * run['acc']:9.2f}% "
                   f"{run['loss']:9.4f} | {paper_columns(label)}")
    report.table(f"Figs. 4 and 17: bloom policies at fpr 1e-3. error columns: the Fig. 8 layer, means over {seeds} "
                 f"gradients (energy = |sent|^2/|top-r|^2, error = |sent - top-r|/|top-r|; peak resid: the largest "
                 f"|residual|/|gradient| over 50 steps of error feedback, fig8.residual_growth); run columns: "
                 f"{TASK(trainer)}; 'diverged': the loss turned NaN (the ranks then send non-finite markers)", head, out)

    pyplot = plt()
    fig, (a, d, b, c) = pyplot.subplots(1, 4, figsize=(20, 4.5))
    curves = dict(runs, **{"Top-r": topk, "Baseline": dense})
    for label, accs in FIG4_PAPER.items():
        d.plot(FIG4_STEPS, [100 * v for v in accs], marker="o", ms=3, label=label, color=POLICY_COLORS[label])
    d.set_xlabel("steps (thousands)")
    d.set_ylabel("test accuracy %")
    d.set_title("Fig. 4 (paper): ResNet-20, CIFAR-10, fpr 1e-3", fontsize=9)
    d.legend(fontsize=7)
    for label, run in curves.items():
        a.plot(range(1, len(run["curve"]) + 1), [100 * v for v in run["curve"]], marker="o", ms=3, label=label,
               color=POLICY_COLORS[label])
    a.set_xlabel("epoch")
    a.set_ylabel("test accuracy %")
    a.set_title(f"Fig. 4 (ours): convergence, mean of {trainer.seeds} seeds", fontsize=9)
    a.legend(fontsize=7)
    # Our accuracies differ by less than their seed spread at fpr 1e-3; the test loss ranks them.
    for label, run in curves.items():
        if label != "Baseline":
            b.scatter(100 * run["volume"], run["loss"], s=45, label=label, color=POLICY_COLORS[label])
    b.axhline(dense["loss"], ls="--", c="gray", label="Baseline")
    b.set_title("Fig. 17 (ours): volume vs test loss (lower is better)", fontsize=9)
    for label, (vol, acc) in FIG17_PAPER.items():
        if label != "Baseline":
            c.scatter(100 * vol, 100 * acc, s=45, label=label, color=POLICY_COLORS[label])
    c.axhline(100 * FIG17_PAPER["Baseline"][1], ls="--", c="gray", label="Baseline")
    c.set_title("Fig. 17a (paper): ResNet-20, CIFAR-10", fontsize=9)
    b.set_ylabel("test loss")
    c.set_ylabel("test accuracy %")
    for ax in (b, c):
        ax.set_xlabel("relative data volume %")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    save(fig, path)


def paper_columns(label):
    """Fig. 17a's volume and accuracy and Fig. 4's last accuracy for a row, where the paper has them."""
    vol_acc = FIG17_PAPER.get(label)
    txt = f"{100 * vol_acc[0]:10.3f}% {100 * vol_acc[1]:10.2f}%" if vol_acc else f"{'':>11} {'':>11}"
    return txt + (f" {100 * FIG4_PAPER[label][-1]:11.1f}%" if label in FIG4_PAPER else "")


# ---------------------------------------------------------------- Table 6

def ncf_gradients(batch, seed=0):
    """The gradients of NeuMF (deepreduce.train.models, MovieLens-20M's user and item counts)
    for one batch of implicit-feedback pairs: users uniform, items Zipf-popular (s = 1.1),
    one positive to four negatives. Only the rows of the embedding tables a batch touches
    are non-zero: the inherently sparse gradient of the paper's NCF runs."""
    import torch
    from deepreduce.train.models import NeuMF
    torch.manual_seed(seed)
    model = NeuMF(NCF_USERS, NCF_ITEMS)
    rng = np.random.default_rng(seed)
    users = torch.from_numpy(rng.integers(0, NCF_USERS, batch))
    items = torch.from_numpy((rng.zipf(1.1, batch) - 1) % NCF_ITEMS)
    labels = torch.from_numpy((rng.random(batch) < 0.2).astype(np.float32))
    torch.nn.functional.binary_cross_entropy_with_logits(model(users, items), labels).backward()
    return {name: p.grad.numpy().ravel().copy() for name, p in model.named_parameters()}


def table6(report, repeat, batch, path):
    grads = ncf_gradients(batch)
    dense = sum(4 * g.size for g in grads.values())
    nonzero = sum(np.count_nonzero(g) for g in grads.values())
    head = f"{'method':<24} | {'bytes':>10} {'rel. volume':>11} | {'paper rel. vol':>14} {'paper hit rate':>14}"
    timing_head = f"{'method':<24} | {'encode ms':>9} {'decode ms':>9}"
    out, timings, bars = [], [], []
    for label, params, paper in progress(TABLE6, "Table 6 codecs"):
        paper_txt = f"{paper[0]:14.4f} {paper[1]:14.4f}" if paper else ""
        c = one_call_compressor(params)
        if c is None:
            out.append(f"{label:<24} | {NOT_BUILT:>22} | {paper_txt}")
            continue
        payloads = {name: c.compress(g, name) for name, g in grads.items()}
        nbytes = sum(t.nbytes for tensors, _ in payloads.values() for t in tensors)
        enc = fig8.best_seconds(lambda: [c.compress(g, n) for n, g in grads.items()], repeat)
        dec = fig8.best_seconds(lambda: [c.decompress(*payloads[n]) for n in grads], repeat)
        out.append(f"{label:<24} | {nbytes:10d} {nbytes / dense:11.4f} | {paper_txt}")
        timings.append(f"{label:<24} | {1e3 * enc:9.1f} {1e3 * dec:9.1f}")
        bars.append((label, nbytes / dense, paper[0] if paper else np.nan))
    report.table(f"Table 6: NeuMF at MovieLens-20M's size ({NCF_USERS} users, {NCF_ITEMS} items, "
                 f"{dense // 4} parameters), one batch of {batch} pairs: {nonzero} non-zero gradient entries "
                 f"({100 * nonzero / (dense // 4):.2f}%). Volume relative to dense float32, frames included. "
                 f"Hit rates need MovieLens-20M itself (not bundled): the paper's are shown.", head, out)
    report.table(f"Table 6 timings: all NeuMF tensors of one step, one CPU core, best of {repeat}", timing_head,
                 timings, deterministic=False)

    pyplot = plt()
    fig, ax = pyplot.subplots(figsize=(8, 4))
    x = np.arange(len(bars))
    ax.bar(x - 0.2, [b[1] for b in bars], 0.4, label=f"ours: NeuMF gradients, batch {batch}")
    ax.bar(x + 0.2, [b[2] for b in bars], 0.4, alpha=0.5, hatch="//", label="paper: NCF on ML-20m")
    ax.set_xticks(x, [b[0] for b in bars], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("volume relative to dense")
    ax.set_title("Table 6: an inherently sparse model", fontsize=10)
    ax.legend(fontsize=8)
    save(fig, path)


# ---------------------------------------------------------------- main

def TASK(trainer):
    return (f"digits MLP, 2 gloo ranks, {trainer.epochs} epochs, top-k ratio {accuracy.BASE['compress_ratio']}, "
            f"mean of {trainer.seeds} seeds")


def progress(items, desc):
    from tqdm import tqdm
    return tqdm(items, desc=desc, file=sys.stderr, leave=False)


FIGURES = ("fig8", "fig15", "fig4_17", "table6")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="1 seed, 2 epochs, 2 fprs, 3 timing repeats, a small NCF batch (a smoke run, not the documented tables)")
    parser.add_argument("--only", default=",".join(FIGURES), help=f"comma-separated subset of {', '.join(FIGURES)}")
    parser.add_argument("--out", type=pathlib.Path, default=OUT, help=f"folder for the PNGs and tables.txt ({OUT})")
    args = parser.parse_args(argv)
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(only) - set(FIGURES))
    if unknown:
        parser.error(f"--only: unknown {', '.join(unknown)}; choose from {', '.join(FIGURES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    # timing repeats, gradients per bloom row, training seeds and epochs, NCF batch
    repeat, seeds, train_seeds, epochs, batch = (3, 1, 1, 2, 4096) if args.quick else \
        (20, 5, 3, accuracy.EPOCHS, 131072)
    report = Report(args.out)
    trainer = Trainer(epochs, train_seeds)
    if "fig8" in only:
        rows, standalone = fig8_measure(repeat)
        fig8_report(report, rows, standalone, repeat)
        fig8_plot(rows, args.out / "fig8.png")
    if "fig15" in only:
        fig15(report, trainer, seeds, args.out / "fig15.png", FIG15_FPRS[::4] if args.quick else FIG15_FPRS)
    if "fig4_17" in only:
        fig4_17(report, trainer, seeds, args.out / "fig4_17.png")
    if "table6" in only:
        table6(report, repeat, batch, args.out / "table6.png")
    report.save()
    print(f"wrote {args.out / 'tables.txt'}")


if __name__ == "__main__":
    main()
