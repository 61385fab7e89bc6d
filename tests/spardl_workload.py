"""The SparDL workload shared by the gloo tests and the mpirun script: a few steps of a
GRACE loop over three NumPy tensors, recording for every step each rank's accumulated
gradient (gradient + residual before the step), its residual after, and the result."""
import hashlib

import numpy as np

from deepreduce import grace_from_params

SIZES = (700, 45, 301)  # uneven on purpose: blocks straddle tensors, the last block is padded


def gradients(rank, step):
    rng = np.random.default_rng([rank, step])
    # a few large entries per tensor, so the selections of the ranks overlap only in part
    return [(rng.standard_normal(n) * rng.choice([0.1, 1.0, 10.0], n)).astype(np.float32) for n in SIZES]


def run_steps(teams, density, steps, transport=None):
    """Returns a list of per-step dicts: names, accumulated, residual, result."""
    params = {"compressor": "topk", "memory": "residual", "communicator": "spardl",
              "compress_ratio": density, "spardl_teams": teams}
    if transport is not None:
        params["transport"] = transport
    grc = grace_from_params(params)
    rank = grc.transport.rank
    names = [f"layer{i}" for i in range(len(SIZES))]
    record = []
    for step in range(steps):
        grads = gradients(rank, step)
        before = [grc.memory.residuals.get(name, np.zeros(g.size, np.float32)).copy()
                  for name, g in zip(names, grads)]
        outs = [grc.step(g.copy(), name) for name, g in zip(names, grads)]
        record.append({
            "accumulated": np.concatenate([g + r for g, r in zip(grads, before)]),
            "residual": np.concatenate([grc.memory.residuals[name] for name in names]),
            "result": np.concatenate([np.asarray(o) for o in outs]),
            "gathered": step > 0,  # the first step is the learning pass, tensor by tensor
        })
    return record


def digest(record):
    """A hash of every result of a run (the same on every rank when results agree)."""
    h = hashlib.sha256()
    for entry in record:
        h.update(entry["result"].tobytes())
    return h.hexdigest()
