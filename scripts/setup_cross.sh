#!/usr/bin/env bash
# Optional, for tests/test_c_aarch64.py: what it takes to cross-compile the C core for
# 64-bit ARM and run its C tests under emulation, on Debian: gcc-aarch64-linux-gnu,
# qemu-user, file, and arm64 zlib, which needs dpkg's arm64 architecture (multiarch).
# Only on Debian (Ubuntu serves arm64 from another mirror, and adding the architecture
# there breaks apt-get update). .ci/run calls it; without it that one test skips.
# Safe to run again: it installs only what is missing.
set -euo pipefail

. /etc/os-release 2>/dev/null || ID=unknown
if [ "${ID}" != debian ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup_cross: not Debian, nothing installed (tests/test_c_aarch64.py will skip)"
  exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
packages=(gcc-aarch64-linux-gnu qemu-user file zlib1g-dev:arm64)
missing=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_cross: installing ${missing[*]}"
  added=0
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    if ! $sudo dpkg --add-architecture arm64; then
      echo "setup_cross: could not add dpkg's arm64 architecture (tests/test_c_aarch64.py will skip)"
      exit 0
    fi
    added=1
  fi
  if ! { $sudo apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
    # Leave apt as it was: an arm64 architecture its mirrors cannot serve would fail
    # every later apt-get update.
    [ "$added" -eq 1 ] && $sudo dpkg --remove-architecture arm64 && $sudo apt-get update -qq || true
    echo "setup_cross: could not install ${missing[*]} (tests/test_c_aarch64.py will skip)"
    exit 0
  fi
fi
echo "setup_cross: aarch64 cross tools ready"
