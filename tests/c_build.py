"""Configuring and building the C tree for the suites that build it (the C tests under
sanitizers, the fuzz targets, the aarch64 cross build): a failed build or any compiler
warning fails the calling test, with the compiler's output."""
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]

# The streamed-store threshold (CMake's DEEPREDUCE_STREAM_MIN_N) of the test builds that
# run slowly (under sanitizers, under qemu): past the tests' other sizes, 64 times below
# the library's own 8 Mi.
STREAM_MIN_N = 1 << 17


def build_warning_free(cmake, build, options, targets=(), cc=None):
    """Configures ROOT into `build` with the -D `options`, then builds `targets` (all when
    empty), with `cc` as the C compiler when given."""
    env = dict(os.environ, CC=cc) if cc else None
    configured = subprocess.run([cmake, "-S", str(ROOT), "-B", str(build), *options],
                                capture_output=True, text=True, env=env)
    assert configured.returncode == 0, configured.stdout + configured.stderr
    target_args = ["--target", *targets] if targets else []
    built = subprocess.run([cmake, "--build", str(build), "-j2", *target_args], capture_output=True, text=True,
                           env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "warning" not in built.stdout + built.stderr, built.stdout + built.stderr
