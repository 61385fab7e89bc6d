"""What one ``grc.step`` costs beyond the C work: a 1,000-element tensor, world size 1
(in-process transport: no communication), steady state, CPU time per step (the minimum
over repeats, which a loaded machine inflates least), for torch tensors and NumPy arrays.

    python benchmarks/step_overhead.py [--steps 2000] [--repeat 7]

On a shared machine, count instructions instead (they do not depend on the load):
``perf stat -e instructions:u`` around a run with ``--steps 4000 --repeat 1`` and one with
``--steps 0``; the difference divided by 4000 is the step's cost. docs/performance.md has both.
"""
import argparse
import time

import numpy as np
import torch

from deepreduce import grace_from_params

METHODS = {
    "none": {},
    "topk + residual": {"compressor": "topk", "memory": "residual", "communicator": "allgather"},
    "qsgd": {"compressor": "qsgd", "communicator": "allgather"},
    "randomk + residual": {"compressor": "randomk", "memory": "residual"},
}


def per_step_us(params, x, steps, repeat):
    grc = grace_from_params(dict(params, world_size=1, transport="local"))
    for _ in range(200):
        grc.step(x, "w")
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(steps):
            grc.step(x, "w")
        best = min(best, (time.process_time() - start) / max(steps, 1) * 1e6)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000, help="steps per repeat (default: 2000)")
    parser.add_argument("--repeat", type=int, default=7, help="repeats; the minimum is reported (default: 7)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"grc.step on 1,000 float32, world size 1, CPU µs per step (min of {args.repeat} x {args.steps})")
    print(f"{'method':<20} {'torch':>8} {'numpy':>8}")
    for name, params in METHODS.items():
        t = per_step_us(params, torch.randn(1000), args.steps, args.repeat)
        a = per_step_us(params, np.random.default_rng(0).standard_normal(1000).astype(np.float32), args.steps,
                        args.repeat)
        print(f"{name:<20} {t:8.1f} {a:8.1f}")


if __name__ == "__main__":
    main()
