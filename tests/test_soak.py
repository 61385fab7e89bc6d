"""Soak: 10,000 steps of a small model through every compressor and every DeepReduce
wrapper, in one process (world size 1), with the resident set sampled as it runs: after a
warm-up (workspaces grown, caches filled) memory must stay flat, and training must keep
making progress with finite weights. The soak runs in a fresh process of its own (this
file as a script), so that its resident set is its own: a pytest worker carries what the
tests before it left (threads, heap), and one such worker's set moved by 2.3 MiB once."""
import json
import pathlib
import resource
import subprocess
import sys

import numpy as np
import pytest

from deepreduce.pairings import PAIRINGS, natural_params
from deepreduce.wrappers import deepreduce_from_params

STEPS = 10_000  # per compressor and per wrapper
WARMUP = 1_000
SAMPLES = 10
GROWTH_LIMIT = 2 << 20  # bytes of RSS growth tolerated after the warm-up (allocator noise)
WRAPPED = [("index", "bloom", "raw", "conflict_sets"), ("value", "raw", "polyfit", "leftmost"),
           ("both", "ef", "qsgd", "leftmost"), ("both", "bloom", "dexp", "p0")]


def rss_bytes():
    """The current resident set (from /proc: getrusage only gives the peak)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def configs():
    """Every compressor with its natural memory and communicator (LGC, which has no entry
    in the pairing table, with its own: no memory, allreduce, short stages 1 and 2), then
    each wrapper mode over topk (min_numel 0, so the codecs run on every tensor)."""
    for name in PAIRINGS:
        yield natural_params(name, compress_ratio=0.1, threshold=0.05)
    yield {"compressor": "lgc", "memory": "none", "communicator": "allreduce", "compress_ratio": 0.1,
           "lgc_dense_steps": 30, "lgc_train_steps": 60}
    for mode, index, value, policy in WRAPPED:
        yield natural_params("topk", compress_ratio=0.1, deepreduce=mode, index=index, value=value,
                             policy=policy, min_numel=0)


class LinearModel:
    """y = x W + b by least squares on a fixed teacher: small, cheap, with a 2-D tensor
    (powersgd's matrix path) and a vector."""

    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.teacher = rng.standard_normal((32, 8)).astype(np.float32)
        self.params = {"fc.weight": np.zeros((32, 8), np.float32), "fc.bias": np.zeros(8, np.float32)}
        self.rng = rng

    def gradients(self):
        x = self.rng.standard_normal((16, 32)).astype(np.float32)
        err = x @ self.params["fc.weight"] + self.params["fc.bias"] - x @ self.teacher
        return {"fc.weight": x.T @ err / 16, "fc.bias": err.mean(axis=0)}

    def loss(self):
        x = self.rng.standard_normal((256, 32)).astype(np.float32)
        return float(np.mean((x @ self.params["fc.weight"] + self.params["fc.bias"] - x @ self.teacher) ** 2))


def soak():
    """Every configuration's steps, the resident set sampled after the warm-up; returns
    the samples and each model's loss before and after."""
    grcs = [deepreduce_from_params({**params, "transport": "local", "world_size": 1}) for params in configs()]
    models = [LinearModel(i) for i in range(len(grcs))]
    start_loss = [m.loss() for m in models]
    samples = []
    for step in range(STEPS):
        for grc, model in zip(grcs, models):
            for name, grad in model.gradients().items():
                model.params[name] -= 0.02 * np.asarray(grc.step(grad, name))
        if step >= WARMUP and (step - WARMUP) % ((STEPS - WARMUP) // SAMPLES) == 0:
            samples.append(rss_bytes())
    samples.append(rss_bytes())
    return {"samples": samples, "losses": [[before, model.loss()] for before, model in zip(start_loss, models)]}


@pytest.mark.slow
def test_ten_thousand_steps_through_every_compressor_keep_memory_flat():
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=1800,
                          cwd=pathlib.Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    samples = result["samples"]
    growth = max(samples) - samples[0]
    assert growth <= GROWTH_LIMIT, f"RSS grew {growth / 2**20:.1f} MiB after the warm-up: {samples}"
    for params, (before, after) in zip(configs(), result["losses"]):
        assert np.isfinite(after) and after < before, (params, before, after)


if __name__ == "__main__":
    print(json.dumps(soak()))
