"""The benchmarks that had no test of their own, each run as a user runs it (a short
configuration, a real process, gloo ranks where the benchmark spawns them), its table read
back: they keep working as the code under them changes, and what their tables claim holds
for the run (forged Bloom frames refused, ranks bit-identical, odd inputs handled)."""
import subprocess
import sys

import pytest
import benchmark_modules

pytest.importorskip("torch")

BENCHMARKS = benchmark_modules.BENCHMARKS


def run(script, *args, timeout=300):
    out = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def table_rows(text):
    """The cells of a markdown table's body rows."""
    rows = [line.strip("|").split("|") for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row] for row in rows[2:]]


def floats_after(text, label):
    line = next(line for line in text.splitlines() if line.startswith(label + " "))
    return [float(v) for v in line[len(label):].split()]


@pytest.mark.slow
def test_step_overhead_gives_both_kinds_for_every_method():
    text = run("step_overhead.py", "--steps", "50", "--repeat", "1").stdout
    for label in ("none", "topk + residual", "qsgd", "randomk + residual"):
        torch_us, numpy_us = floats_after(text, label)
        assert 0 < torch_us < 10_000 and 0 < numpy_us < 10_000


@pytest.mark.slow
def test_step_ranks_times_methods_and_deepreduce_configs_on_two_ranks():
    text = run("step_ranks.py", "--workers", "2", "--numel", "20000", "--steps", "2",
               "--methods", "topk,qsgd", "--configs", "index:bloom:raw").stdout
    assert "over 2 gloo ranks" in text
    for label in ("topk", "qsgd", "index:bloom:raw"):
        assert floats_after(text, label)[0] > 0


@pytest.mark.slow
def test_tensorflow_crossing_times_every_way_across():
    pytest.importorskip("tensorflow")
    rows = table_rows(run("tensorflow_crossing.py", "--sizes", "1000", "--calls", "10").stdout)
    names = [row[0] for row in rows]
    assert {"identity, eager", "grc.step, NumPy array", "grc.step, TF tensor in tf.function"} <= set(names)
    for row in rows:
        fastest, median = (float(v.replace(",", "")) for v in row[1].split(" / "))  # "1,060" on a busy machine
        assert 0 < fastest <= median


@pytest.mark.slow
def test_hostile_bloom_refuses_every_forgery_and_decodes_every_honest_frame():
    rows = table_rows(run("hostile_bloom.py").stdout)
    assert len(rows) == 12  # four receiver policies, three frames each
    for policy, frame, seconds, outcome in rows:
        assert outcome == "decoded" if frame.startswith("honest") else outcome.startswith("refused"), (policy, frame)
        assert float(seconds) < 1.0


@pytest.mark.slow
def test_odd_inputs_are_handled_by_every_method_without_warnings():
    out = run("odd_inputs.py")
    rows = table_rows(out.stdout)
    assert len(rows) >= 20
    for method, *cells in rows:
        *floats, int32 = cells
        assert set(floats) <= {"ok", "nonfinite"}, (method, floats)
        assert int32 == "TypeError", method
    assert "Warning" not in out.stderr, out.stderr[-2000:]


@pytest.mark.slow
def test_grace_accuracy_trains_methods_with_ranks_bit_identical():
    text = run("grace_accuracy.py", "--epochs", "1", "--methods", "topk,qsgd").stdout
    rows = [line.split() for line in text.splitlines() if line.split()[:1] in (["none"], ["topk"], ["qsgd"])]
    assert [row[0] for row in rows] == ["none", "topk", "qsgd"]
    assert all("identical" in row for row in rows), rows


def test_lgc_table_times_only_stages_that_span_whole_epochs():
    """lgc_table.py divided by zero where stage 2 or 3 spanned no whole epoch (a short run:
    --epochs 2 --dense-steps 5 --train-steps 10); such a stage is now left untimed, and a
    run that ends before a stage-3 step has no stage-3 bytes."""
    lgc_table = benchmark_modules.load("lgc_table")
    run = {"epochs": [{"wall_s": 0.0}, {"wall_s": 1.0}, {"wall_s": 3.0}],
           "steps": [{"epoch": 1, "bytes_sent": 8}] * 2 + [{"epoch": 2, "bytes_sent": 8}] * 2}
    assert lgc_table.step_seconds(run, 1, 2) == 0.75
    assert lgc_table.step_seconds(run, 2, 20) == 1.0        # past the run's end: its last epoch
    assert lgc_table.step_seconds(run, 2, 1) is None        # a stage inside one epoch
    assert lgc_table.step_seconds(run, 3, 20) is None       # a stage after the run
    assert lgc_table.stage3_per_worker(run, (0, 1)) == 4.0  # steps 2 and 3, over 2 workers
    assert lgc_table.stage3_per_worker(run, (0, 5)) is None


@pytest.mark.slow
def test_every_benchmark_answers_help_with_its_usage():
    """hostile_bloom.py took --help for its tensor size (a ValueError from int()), and
    index_floor.py ran the whole benchmark: each now parses its command line first."""
    scripts = sorted(BENCHMARKS.glob("*.py"))
    runs = [(script, subprocess.Popen([sys.executable, str(script), "--help"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)) for script in scripts]
    for script, process in runs:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0 and out.startswith("usage: "), (script.name, err[-2000:])
