"""What every compressor (and the DeepReduce wrappers over topk) does with odd inputs,
through the public API at world size 1: one row per method, one column per input, each
cell "ok" (finite result of the input's shape and dtype), "nonfinite" (a result carrying
NaN/Inf), or the exception's class. Prints a markdown table (docs/reliability.md).

    python benchmarks/odd_inputs.py
"""
import argparse

import numpy as np
import torch

from deepreduce.pairings import PAIRINGS, natural_params
from deepreduce.wrappers import deepreduce_from_params

N = 2000
INPUTS = {
    "empty": lambda: np.zeros((0, 4), np.float32),
    "one elem": lambda: np.ones(1, np.float32),
    "zeros": lambda: np.zeros(N, np.float32),
    "±3e38": lambda: np.where(np.arange(N) % 2, 3e38, -3.2e38).astype(np.float32),
    "subnormal": lambda: np.full(N, 1e-40, np.float32),
    "NaN": lambda: np.where(np.arange(N) == 7, np.nan, 1.0).astype(np.float32),
    "Inf": lambda: np.where(np.arange(N) == 7, np.inf, 1.0).astype(np.float32),
    "float64": lambda: np.linspace(-1, 1, N),
    "torch bf16": lambda: torch.linspace(-1, 1, N, dtype=torch.bfloat16),
    "int32": lambda: np.arange(N, dtype=np.int32),
}


def configs():
    for name in PAIRINGS:
        yield name, natural_params(name, compress_ratio=0.05, threshold=0.5)
    for mode, index, value in (("index", "bloom", "raw"), ("value", "raw", "polyfit"), ("both", "ef", "qsgd")):
        yield f"topk+{mode}({index},{value})", natural_params("topk", compress_ratio=0.05, deepreduce=mode,
                                                            index=index, value=value, min_numel=0)


def outcome(params, make):
    grc = deepreduce_from_params({**params, "transport": "local", "world_size": 1})
    x = make()
    try:
        out = grc.step(x, "w")
    except Exception as exc:  # the table reports it
        return type(exc).__name__
    values = out.float().numpy() if isinstance(out, torch.Tensor) else np.asarray(out, dtype=np.float64)
    if tuple(out.shape) != tuple(x.shape) or out.dtype != x.dtype:
        return "shape/dtype!"
    return "ok" if np.isfinite(values).all() else "nonfinite"


def main():
    print("| method | " + " | ".join(INPUTS) + " |")
    print("|---|" + "---|" * len(INPUTS))
    for label, params in configs():
        print(f"| {label} | " + " | ".join(outcome(params, make) for make in INPUTS.values()) + " |")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
