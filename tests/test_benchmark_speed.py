"""benchmarks/speed.py, run as a user runs it on a small tensor: every table prints, every
GRACE method's torch version and ours run and give a ratio, and the header names the CPU
(docs/performance.md tells hosts apart by it)."""
import re
import subprocess
import sys

import pytest
import benchmark_modules

pytest.importorskip("torch")

BENCH = benchmark_modules.BENCHMARKS / "speed.py"


@pytest.mark.slow
def test_every_table_prints_with_a_ratio_for_every_grace_method():
    speed = benchmark_modules.load("speed")
    out = subprocess.run([sys.executable, str(BENCH), "--numel", "200000", "--repeat", "1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    header = text.splitlines()[0]
    assert "SIMD path" in header and speed.cpu_description() in header
    for title in ("## top-k", "## top-k of one layer", "## GRACE methods, n = 200,000", "## quantiser kernels",
                  "## index codecs", "## threads"):
        assert title in text, title
    rows = {line.split("  ")[0].strip(): line for line in text.split("## GRACE methods")[1].split("\n## ")[0].splitlines()}
    for name, _, _ in speed.GRACE_METHODS:
        if name != "none":  # the baseline itself has no ratio
            assert re.search(r"\d+\.\dx$", rows[name]), rows.get(name)
