"""benchmarks/ddp_overlap.py: its pooled medians, and a short run over a rate-limited link
(2 real gloo ranks inside a network namespace) whose table says the two hooks ended with
the same parameters."""
import subprocess
import sys

import pytest
import benchmark_modules
from namespaces import namespaces_permitted

pytest.importorskip("torch")

BENCH = benchmark_modules.BENCHMARKS / "ddp_overlap.py"
ddp_overlap = benchmark_modules.load("ddp_overlap")


def test_medians_pool_every_repeat_and_any_differing_digest_shows():
    rows = []
    for label in ddp_overlap.METHODS:
        rows += [(label, False, [0.010, 0.030], "a", 6), (label, True, [0.005], "a", 6),
                 (label, False, [0.020], "a", 6), (label, True, [0.007, 0.009], "a", 6)]
    rows[-1] = rows[-1][:3] + ("b",) + rows[-1][4:]  # the last method's last run differs
    table = ddp_overlap.summarize(rows)
    for label, (buckets, sync, over, same) in table.items():
        assert (buckets, sync, over) == (6, 0.020, 0.007)
        assert same is (label != list(ddp_overlap.METHODS)[-1])


@pytest.mark.slow
@pytest.mark.skipif(namespaces_permitted() is not None, reason=str(namespaces_permitted()))
def test_a_short_run_over_a_limited_link_ends_with_the_same_parameters():
    out = subprocess.run([sys.executable, str(BENCH), "--link", "1gbit", "--steps", "4", "--warmup", "1",
                          "--width", "256", "--layers", "4", "--bucket-mb", "0.2", "--repeats", "2"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert "2 gloo ranks over a 1gbit link, median of 2 x 3 steps" in lines[0], lines
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert set(rows) == {label.split()[0] for label in ddp_overlap.METHODS}
    for row in rows.values():
        assert int(row[-5]) >= 4 and row[-1] == "True", row  # buckets, same params


def test_refuses_a_repeat_count_below_one():
    out = subprocess.run([sys.executable, str(BENCH), "--repeats", "0"], capture_output=True, text=True)
    assert out.returncode == 2 and "--repeats be at least 1" in out.stderr
