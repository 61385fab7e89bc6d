"""Accuracy and volume of DeepReduce configurations against plain top-k, on a small real
task: scikit-learn's digits (8x8 images, 10 classes; 80/20 split, seed 0), an MLP
64-256-256-10, SGD (lr 0.1, batch 32 per rank), 2 gloo ranks spawned locally. Each seed
gives another initial model and data order, the same for every configuration; the table
gives the mean and the spread (min-max) over the seeds, so a difference between rows can be
told from noise. Training is short on purpose (3 epochs): at 20 every configuration ends
at the same 94.17% and the table cannot tell codecs apart. Volume = bytes this rank sent
/ dense float32 bytes, over the whole run, frame headers included. The DeepReduce runs
set min_numel = 0, so the biases are top-k'd as in the plain top-k run.

Every number is a function of the seeds and versions alone (one torch thread per rank,
counter-based generators in the C core, sums in rank order): the same command gives the
same table on every run and SIMD level.

    python benchmarks/deepreduce_accuracy.py [--epochs 3] [--seeds 3]
"""
import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import distributed  # noqa: E402  (the tests' spawner: gloo over loopback)

BASE = {"memory": "residual", "communicator": "allgather", "compress_ratio": 0.01, "min_numel": 0}
CONFIGS = [
    ("dense (none, allreduce)", {"compressor": "none", "memory": "none", "communicator": "allreduce"}),
    ("top-k 1%", dict(BASE, compressor="topk")),
    ("DR both: ef + qsgd", dict(BASE, compressor="topk", deepreduce="both", index="ef", value="qsgd")),
    ("DR both: rice + qsgd", dict(BASE, compressor="topk", deepreduce="both", index="rice", value="qsgd")),
    ("DR both: bloom P0 + qsgd", dict(BASE, compressor="topk", deepreduce="both", index="bloom", policy="p0",
                                      value="qsgd")),
    ("DR value: polyfit", dict(BASE, compressor="topk", deepreduce="value", value="polyfit")),
    ("DR both: bloom P2 + polyfit", dict(BASE, compressor="topk", deepreduce="both", index="bloom",
                                         policy="conflict_sets", value="polyfit")),
]


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
        accuracy = (logits.argmax(1) == yte).float().mean().item()
        loss = F.cross_entropy(logits, yte).item()
    totals = deepreduce.stats.GLOBAL.totals()
    return accuracy, loss, totals["relative_volume"], time.perf_counter() - start


def run_all(rank, world_size, epochs, seeds):
    return [[train(rank, world_size, params, epochs, seed) for seed in range(seeds)] for _, params in CONFIGS]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (default: 3)")
    parser.add_argument("--seeds", type=int, default=3, help="initial models and data orders (default: 3)")
    args = parser.parse_args()
    rank0, rank1 = distributed.run(run_all, 2, args.epochs, args.seeds, timeout=1200)
    print(f"digits, MLP 64-256-256-10, 2 gloo ranks, {args.epochs} epochs, top-k ratio 0.01, "
          f"{args.seeds} seeds: mean [min, max]")
    print(f"{'configuration':<30} {'test acc %':>22} {'test loss':>8} {'volume':>8} {'x less than top-k':>17}")
    topk_volume = sum(run[2] for run in rank0[1]) / args.seeds
    for (label, _), runs, other in zip(CONFIGS, rank0, rank1):
        assert [r[:2] for r in runs] == [o[:2] for o in other], "ranks disagree"
        acc = [100 * r[0] for r in runs]
        loss = sum(r[1] for r in runs) / len(runs)
        vol = sum(r[2] for r in runs) / len(runs)
        print(f"{label:<30} {sum(acc) / len(acc):7.2f} [{min(acc):5.2f}, {max(acc):5.2f}] {loss:8.4f} "
              f"{100 * vol:7.3f}% {topk_volume / vol:16.2f}x")


if __name__ == "__main__":
    main()
