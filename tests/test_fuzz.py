"""The fuzzers, briefly (the long campaign's command and numbers are in
docs/reliability.md): the libFuzzer targets of fuzz/ built with clang under ASan + UBSan
and run for a few seconds each from a corpus our own encoders write, and the Python
mutation fuzzer over every compressor's and wrapper's decompress."""
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fuzz"))

import make_corpus  # noqa: E402
import py_fuzz  # noqa: E402
from tests.c_build import build_warning_free  # noqa: E402

TARGETS = ["fuzz_frame", "fuzz_sections"]
SECONDS_PER_TARGET = 8


@pytest.fixture(scope="module")
def fuzz_build(tmp_path_factory):
    """The targets, built once: clang is a CI requirement (scripts/setup.sh installs it
    with libFuzzer), so its absence fails rather than skips."""
    clang, cmake = shutil.which("clang"), shutil.which("cmake")
    assert clang and cmake, "the fuzz targets need clang (with libFuzzer) and cmake: run scripts/setup.sh"
    build = tmp_path_factory.mktemp("fuzz-build")
    build_warning_free(cmake, build, ["-DDEEPREDUCE_FUZZ=ON", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], TARGETS, cc=clang)
    corpus = tmp_path_factory.mktemp("corpus")
    make_corpus.main(corpus)
    return build, corpus


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
def test_libfuzzer_target_runs_clean_for_a_few_seconds(fuzz_build, target, tmp_path):
    build, corpus = fuzz_build
    work = tmp_path / "corpus"
    shutil.copytree(corpus / target, work)
    seeds = len(list(work.iterdir()))
    assert seeds > 50
    ran = subprocess.run([str(build / "fuzz" / target), f"-max_total_time={SECONDS_PER_TARGET}", "-timeout=1",
                          "-rss_limit_mb=2048", "-malloc_limit_mb=1024", "-print_final_stats=1",
                          f"-artifact_prefix={tmp_path}/", str(work)],
                         capture_output=True, text=True, timeout=120)
    tail = ran.stderr[-4000:]
    assert ran.returncode == 0, tail
    executed = [int(line.split(":")[-1]) for line in ran.stderr.splitlines()
                if line.startswith("stat::number_of_executed_units")]
    assert executed and executed[0] > 1000, tail
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*"))


@pytest.mark.slow
def test_python_mutation_fuzzer_finds_nothing_in_every_compressor_wrapper_and_lgc_frame():
    findings = []
    configs = list(py_fuzz.configs())
    total = 0
    for i, params in enumerate(configs):
        runs, found, _ = py_fuzz.fuzz_config(params, 6.0 / len(configs), i, findings.append)
        assert found == 0, findings[:5]
        total += runs
    runs, found, _ = py_fuzz.fuzz_lgc_frames(1.0, 0, findings.append)
    assert found == 0 and runs > 100, findings[:5]
    assert total > 2000


def test_campaign_selectors_name_the_decoders_fuzz_sections_runs():
    """fuzz/campaign.sh pins each fuzz_sections decoder by selector number: each name
    must be the codec that number selects (index codecs, then DR_INDEX_COUNT_ + value
    codecs, then the permutation section), every decoder must have its line, and the
    seed corpus must hold a section for each."""
    from deepreduce._native import lib
    text = (ROOT / "fuzz" / "campaign.sh").read_text()
    pinned = {}
    for word in text.split():
        parts = word.strip('"').split(":")
        if len(parts) == 3 and parts[0] == "fuzz_sections" and parts[1] != "-1":
            pinned[parts[2]] = int(parts[1])
    expected = {"permutation": make_corpus.PERMUTATION}
    for name in dir(lib):
        for side, base in (("INDEX", 0), ("VALUE", lib.DR_INDEX_COUNT_)):
            prefix = f"DR_{side}_"
            if name.startswith(prefix) and not name.endswith(("_RAW", "COUNT_")):
                expected[f"{side.lower()}-{name[len(prefix):].lower()}"] = base + getattr(lib, name)
    assert pinned == expected
    seeded = {blob[0] for blob in make_corpus.sections()}
    assert set(expected.values()) <= seeded
