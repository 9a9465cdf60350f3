#!/usr/bin/env bash
# Installs the Debian packages powertrain needs (only those missing) and configures + builds it.
# Usage: scripts/setup.sh [build-dir [cmake options...]]   (default: build). Runs as root or with
# sudo available.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
shift $(($# > 0 ? 1 : 0))

packages=(build-essential cmake g++ libfmt-dev libcli11-dev nlohmann-json3-dev libboost-dev
          libboost-graph-dev libgtest-dev libgmock-dev libbenchmark-dev libeigen3-dev libsimdjson-dev zlib1g-dev
          libfftw3-dev
          python3-scipy python3-numpy python3-pandas libxgboost-dev chromium libsqlite3-dev clang
          pybind11-dev python3-dev python3-pytest wrk libopenmpi-dev openmpi-bin)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=/usr/bin/python3 "$@" \
  >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
