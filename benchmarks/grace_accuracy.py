"""Accuracy of every GRACE method against dense training on a small real task.

    python benchmarks/grace_accuracy.py [--epochs 30] [--ratio 0.01] [--methods topk,qsgd]

A GRACE-style script (a loop over ``named_parameters`` calling ``grc.step``) trains a
64-64-10 MLP on scikit-learn's digits (8x8 images, 1,347 train / 450 test) on 2 gloo ranks
spawned here, each on its half of every batch. Every method runs with its natural memory
and communicator (``deepreduce.pairings``), the same initial model, the same batches and
the same number of epochs as the dense run ('none': float32 over allreduce); one spawn
trains them all in turn. The table gives the final test accuracy, the gap to dense in points, the
volume sent relative to dense float32, and whether both ranks ended bit-identical.
"""
import argparse
import multiprocessing as mp
import os
import socket
import time
import traceback
from datetime import timedelta

DENSE = "none"  # the baseline: float32 gradients averaged by allreduce
SIGN_METHODS = ("signsgd", "signum")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_digits_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    data = load_digits()
    x = data.data.astype("float32") / 16.0
    return train_test_split(x, data.target, test_size=0.25, random_state=0, stratify=data.target)


def method_params(method, ratio):
    from deepreduce.pairings import natural_params
    return natural_params(method, compress_ratio=ratio)


def train_one(rank, world_size, params, lr, epochs, batch, data):
    """One run: the GRACE-style loop. Returns (test accuracy, relative volume, flat params)."""
    import torch
    import torch.nn.functional as F
    import deepreduce
    from grace_dl.dist.helper import grace_from_params

    x_train, x_test, y_train, y_test = (torch.from_numpy(a) for a in data)
    y_train, y_test = y_train.long(), y_test.long()
    torch.manual_seed(0)  # the same model on every rank and for every method
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    grc = grace_from_params(params)
    grc.stats = deepreduce.stats.Stats()  # this run's volume only
    order = torch.Generator().manual_seed(1)
    for _ in range(epochs):
        perm = torch.randperm(x_train.shape[0], generator=order)  # same on every rank
        for start in range(0, perm.numel() - world_size * batch + 1, world_size * batch):
            idx = perm[start + rank * batch:start + (rank + 1) * batch]  # this rank's half
            optimizer.zero_grad()
            F.cross_entropy(model(x_train[idx]), y_train[idx]).backward()
            for name, p in model.named_parameters():
                p.grad.copy_(grc.step(p.grad, name))
            optimizer.step()
    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
    return accuracy, grc.stats.totals()["relative_volume"], flat


def worker(rank, world_size, port, methods, args, queue):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size, timeout=timedelta(seconds=120))
        data = load_digits_split()
        for method in methods:
            lr = args.sign_lr if method in SIGN_METHODS else args.lr
            start = time.perf_counter()
            accuracy, volume, flat = train_one(rank, world_size, method_params(method, args.ratio), lr,
                                               args.epochs, args.batch, data)
            queue.put((rank, method, (accuracy, volume, flat.tobytes(), time.perf_counter() - start)))
        dist.destroy_process_group()
    except BaseException:
        queue.put((rank, None, traceback.format_exc()))


def main(argv=None):
    from deepreduce.pairings import PAIRINGS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32, help="per-rank batch size")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--sign-lr", type=float, default=0.01,
                        help="lr of signsgd and signum, whose updates are ±lr per weight")
    parser.add_argument("--ratio", type=float, default=0.01, help="compress_ratio of the sparsifiers")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--methods", default=",".join(PAIRINGS), help="comma-separated compressors")
    args = parser.parse_args(argv)
    methods = [DENSE] + [m for m in args.methods.split(",") if m and m != DENSE]

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, args.world_size, port, methods, args, queue))
             for r in range(args.world_size)]
    for p in procs:
        p.start()
    print(f"digits, {args.world_size} gloo ranks, {args.epochs} epochs, batch {args.batch}/rank, "
          f"lr {args.lr} (sign methods {args.sign_lr}), compress_ratio {args.ratio}")
    print(f"{'method':<11} {'memory':<10} {'communicator':<12} {'accuracy':>8} {'vs dense':>9} "
          f"{'volume':>8} {'ranks':>9} {'seconds':>8}")
    results, done = {}, 0
    try:
        while done < len(methods):
            rank, method, value = queue.get(timeout=1800)
            if method is None:
                raise SystemExit(f"rank {rank} failed:\n{value}")
            results.setdefault(method, {})[rank] = value
            if len(results[method]) < args.world_size:
                continue
            done += 1
            accuracy, volume, flat, seconds = results[method][0]
            identical = all(v[2] == flat for v in results[method].values())
            dense = results[DENSE][0][0]
            params = method_params(method, args.ratio)
            print(f"{method:<11} {params['memory']:<10} {params['communicator']:<12} {accuracy:8.2%} "
                  f"{100 * (accuracy - dense):+8.1f}p {volume:8.2%} {'identical' if identical else 'DIFFER':>9} "
                  f"{seconds:8.1f}", flush=True)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()


if __name__ == "__main__":
    main()
