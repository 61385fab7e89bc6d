"""The C core on a second architecture: cross-compiled for 64-bit ARM Linux (no x86
SIMD there, so every kernel takes its portable path), warning-free under -Werror, and the
C test programs run under qemu-aarch64. ARM differs from x86 where portable C can go
wrong unnoticed: `char` is unsigned, an out-of-range float-to-int conversion saturates,
memory ordering is weaker.

qemu-user as Debian bookworm ships it hangs in pthread_create, so the programs that run
come from a build without threads (every range on the caller's thread, as on a platform
without POSIX threads); the build with threads is compiled, not run. Both stream from
STREAM_MIN_N elements (tests/c_build.py), as the sanitizer build does: emulated, the
streamed paths' cases at 8 Mi took most of the run. Needs
gcc-aarch64-linux-gnu, qemu-user and zlib1g-dev:arm64 (scripts/setup_cross.sh, which
.ci/run calls); skipped without them."""
import pathlib
import shutil
import subprocess

import pytest

from tests.c_build import ROOT, STREAM_MIN_N, build_warning_free

TOOLCHAIN = ROOT / "cmake" / "aarch64-linux-gnu.cmake"


def _build(cmake, build, extra_flags):
    build_warning_free(cmake, build, [f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}", "-DCMAKE_BUILD_TYPE=Release",
                                      "-DDEEPREDUCE_C_TESTS=ON", "-DDEEPREDUCE_WERROR=ON",
                                      f"-DDEEPREDUCE_STREAM_MIN_N={STREAM_MIN_N}", f"-DCMAKE_C_FLAGS={extra_flags}"])
    machine = subprocess.run(["file", "-b", str(build / "test_core")], capture_output=True, text=True).stdout
    assert "aarch64" in machine, machine


@pytest.mark.slow
def test_c_core_builds_and_passes_on_aarch64(tmp_path):
    cmake = shutil.which("cmake")
    missing = [tool for tool in ("aarch64-linux-gnu-gcc", "qemu-aarch64", "file", "ctest")
               if shutil.which(tool) is None]
    if cmake is None or missing or not pathlib.Path("/usr/lib/aarch64-linux-gnu/libz.so").exists():
        pytest.skip("no aarch64 cross tools (bash scripts/setup_cross.sh installs them)")
    _build(cmake, tmp_path / "threads", "")
    # Without __unix__ the core builds without POSIX threads (src/c/core/parallel.c).
    _build(cmake, tmp_path / "single", "-U__unix__")
    # The SIMD-level variants of each program are the same run on ARM: the plain ones only.
    ran = subprocess.run(["ctest", "--output-on-failure", "-j2", "-E", "_(scalar|avx2|avx512)$"],
                         cwd=tmp_path / "single", capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "100% tests passed" in ran.stdout
