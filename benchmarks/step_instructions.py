"""Instructions one ``grc.step`` executes, counted by valgrind's callgrind: a number the load
on a shared machine does not move, where ``step_overhead.py``'s microseconds move by 2x
within minutes. The same 1,000-element tensor at world size 1 (in-process transport) as
``step_overhead.py``; counted over --steps steps after 300 of warm-up, and only those:
collection is switched on and off around them by callgrind's client requests (a three-line
helper compiled here with the C compiler and valgrind's headers), so Python's start-up
and imports are not in the count.

    python benchmarks/step_instructions.py [--method topk] [--kind torch] [--steps 1000]

Needs valgrind (apt: valgrind) and a C compiler. valgrind runs no AVX-512, so the C kernels
take their AVX2 paths (DEEPREDUCE_SIMD=avx2); a run takes about a minute and a half per
method and kind. docs/performance.md converts counts to µs with a host's measured rate.
"""
import argparse
import ctypes
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from step_overhead import METHODS  # this folder's: the same steps as its µs table

HELPER = """#include <valgrind/callgrind.h>
void steps_begin(void) { CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; }
void steps_end(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT("steps"); }
"""

# step_overhead.py's methods, by the first word of their rows ("topk" for "topk + residual").
PARAMS = {label.split()[0]: params for label, params in METHODS.items()}
LABELS = {label.split()[0]: label for label in METHODS}


def count_steps(method, kind, steps, helper):
    """Run under callgrind: warm up, then ``steps`` steps between the helper's requests."""
    import numpy as np
    import torch

    from deepreduce import grace_from_params
    torch.set_num_threads(1)
    requests = ctypes.CDLL(helper)
    x = torch.randn(1000) if kind == "torch" else np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    grc = grace_from_params(dict(PARAMS[method], world_size=1, transport="local"))
    for _ in range(300):
        grc.step(x, "w")
    requests.steps_begin()
    for _ in range(steps):
        grc.step(x, "w")
    requests.steps_end()


def measure(method, kind, steps, workdir, helper):
    """Instructions per step of one method and kind, from callgrind's dump of the steps."""
    out = workdir / f"callgrind.{method}.{kind}"
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}",
               sys.executable, __file__, "--inside", helper, "--method", method, "--kind", kind,
               "--steps", str(steps)]
    subprocess.run(command, check=True, capture_output=True, env=dict(os.environ, DEEPREDUCE_SIMD="avx2"))
    dumps = sorted(workdir.glob(f"callgrind.{method}.{kind}.*"))  # the dump at steps_end
    if not dumps:
        raise RuntimeError(f"callgrind wrote no dump for {method}/{kind}; is valgrind's client request support in?")
    summary = next(line for line in dumps[-1].read_text().splitlines() if line.startswith("summary:"))
    return int(summary.split()[1]) / steps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", choices=sorted(PARAMS), help="only this method (default: all)")
    parser.add_argument("--kind", choices=("torch", "numpy"), help="only this kind of tensor (default: both)")
    parser.add_argument("--steps", type=int, default=1000, help="steps counted (default: 1000)")
    parser.add_argument("--inside", metavar="HELPER", help=argparse.SUPPRESS)  # the run under valgrind
    args = parser.parse_args(argv)
    if args.inside:
        return count_steps(args.method, args.kind, args.steps, args.inside)
    missing = [tool for tool in ("valgrind", "cc") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"step_instructions: needs {' and '.join(missing)} on PATH (apt install valgrind gcc)")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        (workdir / "requests.c").write_text(HELPER)
        helper = str(workdir / "librequests.so")
        built = subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", helper, str(workdir / "requests.c")],
                               capture_output=True, text=True)
        if built.returncode:
            sys.exit(f"step_instructions: could not build the callgrind helper (valgrind's headers, "
                     f"apt install valgrind):\n{built.stderr}")
        kinds = [k for k in ("torch", "numpy") if args.kind in (None, k)]
        print(f"grc.step on 1,000 float32, world size 1: thousand instructions per step "
              f"(callgrind, {args.steps} steps, AVX2 paths)")
        print(f"{'method':<20}" + "".join(f" {k:>8}" for k in kinds))
        for method in PARAMS:
            if args.method in (None, method):
                counts = [measure(method, kind, args.steps, workdir, helper) / 1000 for kind in kinds]
                print(f"{LABELS[method]:<20}" + "".join(f" {c:8.1f}" for c in counts), flush=True)


if __name__ == "__main__":
    main()
