#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine for deepreduce: the system packages (a C compiler,
# zlib, Open MPI, iproute2 for the limited-link benchmark), then the package itself in
# editable mode with every extra (torch CPU build, mpi4py, training and test tools).
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  missing=()
  for pkg in build-essential zlib1g-dev openmpi-bin libopenmpi-dev iproute2; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

echo "setup: installing deepreduce (editable) with extras torch, mpi, train, test"
python3 -m pip install -q --disable-pip-version-check -e ".[torch,mpi,train,test]"
python3 -c "import deepreduce; print('setup: deepreduce', deepreduce.__version__, 'ready')"
