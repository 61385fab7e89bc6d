"""What one ``grc.step`` costs beyond the C work: a 1,000-element tensor, world size 1
(in-process transport: no communication), steady state, CPU time per step (the minimum
over repeats, which a loaded machine inflates least), for torch tensors and NumPy arrays.

    python benchmarks/step_overhead.py [--steps 2000] [--repeat 7]

On a shared machine, count instructions instead (they do not depend on the load): one
method and kind per run, ``perf stat -e instructions:u`` around a run with ``--steps 20000
--repeat 1`` and one with ``--steps 0``; the difference divided by 20000 is the step's cost:

    for s in 20000 0; do perf stat -x, -e instructions:u \
        python benchmarks/step_overhead.py --method topk --kind torch --steps $s --repeat 1; done

Where the machine has no perf counters (a VM often has none), benchmarks/step_instructions.py
counts the same steps' instructions with callgrind. docs/performance.md has both.
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
    parser.add_argument("--method", choices=[name.split()[0] for name in METHODS],
                        help="only this method (the first word of its row)")
    parser.add_argument("--kind", choices=("torch", "numpy"), help="only this kind of tensor")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    kinds = {"torch": lambda: torch.randn(1000),
             "numpy": lambda: np.random.default_rng(0).standard_normal(1000).astype(np.float32)}
    kinds = {k: v for k, v in kinds.items() if args.kind in (None, k)}
    print(f"grc.step on 1,000 float32, world size 1, CPU µs per step (min of {args.repeat} x {args.steps})")
    print(f"{'method':<20}" + "".join(f" {k:>8}" for k in kinds))
    for name, params in METHODS.items():
        if args.method in (None, name.split()[0]):
            times = [per_step_us(params, make(), args.steps, args.repeat) for make in kinds.values()]
            print(f"{name:<20}" + "".join(f" {t:8.1f}" for t in times))


if __name__ == "__main__":
    main()
