"""``grc.step`` on a large tensor over W real ranks (gloo over loopback, worker processes
as ``deepreduce train`` starts them): what a step costs the rank that runs it, per
method, as a GRACE or DeepReduce script calls it (residual memory, allgather).

    python benchmarks/step_ranks.py [--workers 2] [--numel 25557032] [--steps 6]
                                    [--methods topk,qsgd,...] [--configs index:bloom:polyfit,...]

Each figure is rank 0's thread CPU time per step (median over the steps after the
first): its own compress, decode and aggregate work, not the time it waits for the
other ranks or the link, which on one shared machine say little. One thread per
rank (torch.set_num_threads(1), DEEPREDUCE_THREADS=1 unless set). docs/performance.md,
"Every rank's payload summed into one tensor", has the results.
"""
import argparse
import os
import time

import numpy as np

# Each method's params beyond its name (the README's and the tables' settings).
METHOD_PARAMS = {
    "topk": {"compress_ratio": 0.01}, "randomk": {"compress_ratio": 0.01},
    "dgc": {"compress_ratio": 0.01}, "threshold": {"threshold": 2.0},
    "qsgd": {"quantum_num": 127, "bucket_size": 128}, "efsignsgd": {"lr": 0.1},
    "signum": {"momentum": 0.9},
}
MEMORY = {"efsignsgd": "efsignsgd"}
DEFAULT_METHODS = "topk,dgc,randomk,qsgd,8bit,signsgd,efsignsgd"
DEFAULT_CONFIGS = "index:bloom:polyfit,index:rice:raw"


def build(method):
    """The communicator for a GRACE method name, or a DeepReduce 'mode:index:value'."""
    from deepreduce import grace_from_params
    from deepreduce.wrappers import DeepReduce, IndexCompressor, ValueCompressor
    if ":" not in method:
        params = {"compressor": method, "memory": MEMORY.get(method, "residual"), "communicator": "allgather"}
        params.update(METHOD_PARAMS.get(method, {}))
        return grace_from_params(params)
    mode, index, value = method.split(":")
    params = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.01,
              "deepreduce": mode, "index": index, "value": value}
    grc = grace_from_params(params)
    grc.compressor = {"value": ValueCompressor, "index": IndexCompressor, "both": DeepReduce}[mode](
        grc.compressor, params)
    return grc


def worker(rank, world, methods, numel, steps):
    import torch
    torch.set_num_threads(1)
    gradient = torch.randn(numel, generator=torch.Generator().manual_seed(rank))
    if rank == 0:
        print(f"grc.step on {numel:,} float32 over {world} gloo ranks: rank 0's CPU ms per step "
              f"(median of {steps - 1} after the first)")
        print(f"{'method':<24} {'ms':>9}")
    for method in methods:
        grc = build(method)
        times = []
        for _ in range(steps):
            start = time.thread_time()
            result = grc.step(gradient, "w")
            times.append(time.thread_time() - start)
            del result  # released, as zero_grad releases p.grad: its buffer is reused
        if rank == 0:
            print(f"{method:<24} {np.median(times[1:]) * 1e3:>9.1f}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="ranks (default: 2)")
    parser.add_argument("--numel", type=int, default=25_557_032, help="tensor size (default: ResNet-50's)")
    parser.add_argument("--steps", type=int, default=6, help="steps per method, the first not counted (default: 6)")
    parser.add_argument("--methods", default=DEFAULT_METHODS,
                        help=f"comma-separated GRACE methods (default: {DEFAULT_METHODS})")
    parser.add_argument("--configs", default=DEFAULT_CONFIGS,
                        help="comma-separated DeepReduce mode:index:value over top-k 1%% "
                             f"(default: {DEFAULT_CONFIGS}; '' for none)")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.steps < 2 or args.numel < 1:
        parser.error("--workers and --numel must be at least 1, --steps at least 2")
    os.environ.setdefault("DEEPREDUCE_THREADS", "1")
    methods = [m for m in args.methods.split(",") if m] + [c for c in args.configs.split(",") if c]
    from deepreduce.train.launch import spawn
    spawn(worker, args.workers, (methods, args.numel, args.steps))


if __name__ == "__main__":
    main()
