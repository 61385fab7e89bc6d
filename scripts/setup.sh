#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine for deepreduce: the system packages (a C compiler,
# zlib, Open MPI, iproute2 for the limited-link benchmark, clang with libFuzzer for the
# fuzz targets in fuzz/), then the package itself in
# editable mode with every extra (torch CPU build, mpi4py, training and test tools, TensorFlow CPU).
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  native="$(dpkg --print-architecture)"
  install_missing() {
    local missing=()
    for pkg in "$@"; do
      # A package installed for two architectures (zlib1g-dev after scripts/setup_cross.sh)
      # answers only to its qualified name.
      dpkg -s "$pkg" >/dev/null 2>&1 || dpkg -s "$pkg:$native" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      echo "setup: installing ${missing[*]}"
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
  }
  install_missing build-essential cmake zlib1g-dev openmpi-bin libopenmpi-dev iproute2 clang
  # libFuzzer ships in the compiler-rt package of clang's own major version (Debian
  # bookworm: clang 14, libclang-rt-14-dev); older releases keep it in libclang-common.
  clang_major="$(clang -dumpversion | cut -d. -f1)"
  if apt-cache show "libclang-rt-${clang_major}-dev" >/dev/null 2>&1; then
    install_missing "libclang-rt-${clang_major}-dev"
  fi
fi

echo "setup: installing deepreduce (editable) with extras torch, mpi, train, test, tensorflow"
python3 -m pip install -q --disable-pip-version-check -e ".[torch,mpi,train,test,tensorflow]"
python3 -c "import deepreduce; print('setup: deepreduce', deepreduce.__version__, 'ready')"
