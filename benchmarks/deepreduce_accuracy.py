"""Accuracy, loss and volume of DeepReduce configurations against plain top-k and dense, on
a small real task: scikit-learn's digits (8x8 images, 10 classes; 80/20 split, seed 0), an
MLP 64-256-256-10, SGD (lr 0.1, batch 32 per rank), 2 gloo ranks spawned locally, 10 epochs.
Volume = bytes this rank sent / dense float32 bytes over the whole run, frame headers
included. The DeepReduce runs set min_numel = 0, so the biases are top-k'd as in the plain
top-k run.

Each seed gives another initial model and data order, the same for every configuration.
Test accuracy does not separate the rows here (its spread across seeds, about 0.7 points,
is wider than the gaps), the final test loss does: the table gives the mean and a 95%
confidence interval (Student t) of each, and of the loss difference to plain top-k taken
seed by seed (paired: the seeds are shared, so that interval is much narrower). A row is
told apart from top-k when its paired interval excludes 0.

Every number is a function of the seeds and versions alone (one torch thread per rank,
counter-based generators in the C core, sums in rank order): the same command gives the
same table on every run and SIMD level (tests/test_deepreduce_paper.py runs --quick twice).

    python benchmarks/deepreduce_accuracy.py [--epochs 10] [--seeds 5] [--quick]
"""
import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import distributed  # noqa: E402  (the tests' spawner: gloo over loopback)

BASE = {"memory": "residual", "communicator": "allgather", "compress_ratio": 0.01, "min_numel": 0}
DENSE = {"compressor": "none", "memory": "none", "communicator": "allreduce"}
TOPK = dict(BASE, compressor="topk")
EPOCHS, SEEDS = 10, 5
CONFIGS = [
    ("dense (none, allreduce)", DENSE),
    ("top-k 1%", TOPK),
    ("DR both: rice + qsgd", dict(TOPK, deepreduce="both", index="rice", value="qsgd")),
    ("DR both: ef + qsgd", dict(TOPK, deepreduce="both", index="ef", value="qsgd")),
    ("DR both: bloom P0 + qsgd", dict(TOPK, deepreduce="both", index="bloom", policy="p0", value="qsgd")),
    ("DR value: polyfit", dict(TOPK, deepreduce="value", value="polyfit")),
    ("DR both: bloom P2 + polyfit", dict(TOPK, deepreduce="both", index="bloom", policy="conflict_sets",
                                         value="polyfit")),
    ("DR index: bloom P2, fpr 0.02", dict(TOPK, deepreduce="index", index="bloom", policy="conflict_sets",
                                          fpr=0.02)),
    ("DR index: bloom P1, fpr 0.02", dict(TOPK, deepreduce="index", index="bloom", policy="random", fpr=0.02)),
    ("DR index: bloom leftmost, fpr 0.02", dict(TOPK, deepreduce="index", index="bloom", policy="leftmost",
                                                fpr=0.02)),
]
QUICK = [CONFIGS[i] for i in (0, 1, 2, 7)]  # --quick: 1 epoch, 2 seeds (a determinism check, not a result)
# Student t quantiles t(0.975, n - 1) for n = 2..10 seeds.
T975 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306, 10: 2.262}


def data():
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    as_tensors = (lambda a: torch.tensor(a, dtype=torch.float32), lambda a: torch.tensor(a, dtype=torch.long))
    return as_tensors[0](xtr), as_tensors[1](ytr), as_tensors[0](xte), as_tensors[1](yte)


def train(rank, world_size, params, epochs, seed, batch=32):
    import torch
    import torch.nn.functional as F
    import deepreduce
    from deepreduce import deepreduce_from_params
    xtr, ytr, xte, yte = data()
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    grc = deepreduce_from_params(params)
    deepreduce.stats.GLOBAL.reset()
    order = torch.Generator().manual_seed(1000 + seed)
    shard = torch.arange(rank, xtr.shape[0], world_size)
    start = time.perf_counter()
    curve = []  # test accuracy after each epoch
    for _ in range(epochs):
        perm = shard[torch.randperm(shard.numel(), generator=order)]
        for i in range(0, perm.numel() - batch + 1, batch):
            idx = perm[i:i + batch]
            optimizer.zero_grad()
            F.cross_entropy(model(xtr[idx]), ytr[idx]).backward()
            for name, p in model.named_parameters():
                p.grad.copy_(grc.step(p.grad, name))
            optimizer.step()
        with torch.no_grad():
            logits = model(xte)
            curve.append((logits.argmax(1) == yte).float().mean().item())
    loss = F.cross_entropy(logits, yte).item()
    totals = deepreduce.stats.GLOBAL.totals()
    return curve[-1], loss, totals["relative_volume"], time.perf_counter() - start, curve


def run_all(rank, world_size, configs, epochs, seeds):
    return [[train(rank, world_size, params, epochs, seed) for seed in range(seeds)] for _, params in configs]


def mean_ci(values):
    """Mean and the half-width of its 95% confidence interval (0 for one value)."""
    n = len(values)
    mean = sum(values) / n
    if n == 1:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, T975[n] * (var / n) ** 0.5


def table(configs=CONFIGS, epochs=EPOCHS, seeds=SEEDS):
    """The table's lines (no timings, so two runs give the same lines)."""
    if seeds not in T975 and seeds != 1:
        raise ValueError(f"seeds={seeds}: choose 1 to {max(T975)}")
    rank0, rank1 = distributed.run(run_all, 2, configs, epochs, seeds, timeout=1800)
    lines = [f"digits, MLP 64-256-256-10, 2 gloo ranks, {epochs} epochs, top-k ratio {BASE['compress_ratio']}, "
             f"{seeds} seeds: mean ± 95% CI",
             f"{'configuration':<35} {'test acc %':>14} {'test loss':>16} {'loss - top-k':>17} "
             f"{'volume':>8} {'x less than top-k':>17}"]
    topk = next(runs for (_, params), runs in zip(configs, rank0) if params == TOPK)
    topk_volume = sum(run[2] for run in topk) / seeds
    for (label, _), runs, other in zip(configs, rank0, rank1):
        assert [r[:2] for r in runs] == [o[:2] for o in other], f"ranks disagree: {label}"
        acc, acc_ci = mean_ci([100 * r[0] for r in runs])
        loss, loss_ci = mean_ci([r[1] for r in runs])
        gap, gap_ci = mean_ci([r[1] - t[1] for r, t in zip(runs, topk)])
        vol = sum(r[2] for r in runs) / seeds
        lines.append(f"{label:<35} {acc:6.2f} ± {acc_ci:5.2f} {loss:7.4f} ± {loss_ci:6.4f} "
                     f"{gap:+8.4f} ± {gap_ci:6.4f} {100 * vol:7.3f}% {topk_volume / vol:16.2f}x")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"training epochs (default: {EPOCHS})")
    parser.add_argument("--seeds", type=int, default=SEEDS, help=f"initial models and data orders (default: {SEEDS})")
    parser.add_argument("--quick", action="store_true",
                        help="4 configurations, 1 epoch, 2 seeds (overrides --epochs and --seeds)")
    args = parser.parse_args()
    if args.epochs < 1 or args.seeds < 1:
        parser.error(f"--epochs and --seeds must be >= 1, got {args.epochs} and {args.seeds}")
    lines = table(QUICK, 1, 2) if args.quick else table(CONFIGS, args.epochs, args.seeds)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
