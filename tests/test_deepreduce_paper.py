"""The DeepReduce reproduction commands: benchmarks/deepreduce_accuracy.py gives the same
table twice (bit-deterministic, across processes), and benchmarks/deepreduce_paper.py
--quick draws every figure and writes its tables."""
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run(*args, timeout=600):
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_accuracy_table_is_the_same_on_every_run():
    first, second = (run("benchmarks/deepreduce_accuracy.py", "--quick") for _ in range(2))
    assert first == second
    rows = first.splitlines()[2:]
    assert [r.split("  ")[0] for r in rows] == ["dense (none, allreduce)", "top-k 1%", "DR both: rice + qsgd",
                                                "DR index: bloom P2, fpr 0.02"]


def test_the_paper_command_draws_every_figure(tmp_path):
    pytest.importorskip("matplotlib")
    out = run("benchmarks/deepreduce_paper.py", "--quick", "--out", str(tmp_path))
    for name in ("fig8.png", "fig15.png", "fig4_17.png", "table6.png", "tables.txt"):
        assert (tmp_path / name).stat().st_size > 1000, name
    tables = (tmp_path / "tables.txt").read_text()
    for title in ("Fig. 8a", "Fig. 15", "Figs. 4 and 17", "Table 6"):
        assert title in tables
    assert "us" not in tables.split("Fig. 8a")[1].split("\n")[1]  # timings stay out of tables.txt
    assert "662" in out  # the bloom filter of the Fig. 8 layer at fpr 1e-3 (SPEC §10)


def test_rows_of_codecs_not_in_the_build_print_not_built(capsys, tmp_path):
    """The one guard behind every table: an unknown codec, policy or compressor gives None
    (the row prints "not built") instead of an exception, in Fig. 8's stand-alone rows as
    in the others."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import deepreduce_paper as paper
    assert paper.one_call_compressor({"compressor": "no-such-compressor"}) is None
    assert paper.one_call_compressor({"compressor": "3lc"}) is not None
    assert paper.runnable(paper.bloom_params(1e-3, "no-such-policy")) is None
    assert paper.runnable(paper.bloom_params(1e-3, "naive")) is not None
    report = paper.Report(tmp_path)
    paper.fig8_report(report, [], [("a codec from elsewhere", None, None, None)], repeat=1)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("a codec from elsewhere")]
    assert len(rows) == 2 and all(paper.NOT_BUILT in row for row in rows)  # volume and timing tables
