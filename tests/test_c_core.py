"""The C core's own test programs, built warning-free (-std=c99 -Wall -Wextra -pedantic
-Werror) with AddressSanitizer and UBSan, run under every SIMD level by ctest. The build
streams outputs from 128 Ki elements (STREAM_MIN_N) instead of 8 Mi: the streamed paths'
cases then take seconds under ASan, not minutes."""
import os
import shutil
import subprocess

import pytest

from tests.c_build import STREAM_MIN_N, build_warning_free


@pytest.mark.slow
def test_c_programs_pass_under_asan_and_ubsan(tmp_path):
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake not installed")
    build = tmp_path / "asan"
    build_warning_free(cmake, build, ["-DCMAKE_BUILD_TYPE=Debug", "-DDEEPREDUCE_C_TESTS=ON",
                                      "-DDEEPREDUCE_SANITIZE=ON", "-DDEEPREDUCE_WERROR=ON",
                                      f"-DDEEPREDUCE_STREAM_MIN_N={STREAM_MIN_N}"])
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1", UBSAN_OPTIONS="print_stacktrace=1")
    ran = subprocess.run(["ctest", "--test-dir", str(build), "--output-on-failure", "-j2"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "100% tests passed" in ran.stdout
