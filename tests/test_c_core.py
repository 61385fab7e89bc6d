"""The C core's own test programs, built warning-free (-std=c99 -Wall -Wextra -pedantic
-Werror) with AddressSanitizer and UBSan, run under every SIMD level by ctest. The build
streams outputs from 128 Ki elements (STREAM_MIN_N) instead of 8 Mi: the streamed paths'
cases then take seconds under ASan, not minutes."""
import os
import shutil
import subprocess

import pytest

from tests.c_build import ROOT, STREAM_MIN_N, build_warning_free


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


CPP_CALLER = r"""
#include "deepreduce.h"
#include <cstdio>
#include <vector>

int main()
{
    std::vector<float> x(1000), out(1000);
    for (size_t i = 0; i < x.size(); i++)
        x[i] = 0.001f * static_cast<float>(i) - 0.5f;
    std::vector<uint8_t> frame(dr_qsgd_size(x.size(), 127, 128));
    size_t written = 0;
    int encoded = dr_qsgd_encode(x.data(), x.size(), 127, 128, 1, DR_DTYPE_FLOAT32, frame.data(), frame.size(),
                                 &written);
    int decoded = dr_qsgd_decode(frame.data(), written, out.data(), out.size());
    std::printf("%s %d %d\n", dr_version_string(), encoded, decoded);
    return encoded != DR_OK || decoded != DR_OK;
}
"""


@pytest.mark.slow
def test_the_header_serves_a_cpp_caller(tmp_path):
    """The public header declares C linkage for C++ (as lz4.h and zstd.h do): without it a
    C++ program compiled but did not link ("undefined reference to dr_qsgd_size(...)")."""
    cmake, cxx = shutil.which("cmake"), shutil.which("g++") or shutil.which("clang++")
    if cmake is None or cxx is None:
        pytest.skip("cmake or a C++ compiler not installed")
    build = tmp_path / "core"
    build_warning_free(cmake, build, ["-DCMAKE_BUILD_TYPE=Release"], targets=["deepreduce_core"])
    (tmp_path / "caller.cpp").write_text(CPP_CALLER)
    library = next(build.rglob("libdeepreduce_core.a"))
    compiled = subprocess.run([cxx, "-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror",
                               "-I", str(ROOT / "src" / "c" / "include"), str(tmp_path / "caller.cpp"),
                               str(library), "-lz", "-lm", "-lpthread", "-o", str(tmp_path / "caller")],
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    ran = subprocess.run([str(tmp_path / "caller")], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.split() == ["0.1.0", "0", "0"], ran.stdout + ran.stderr
