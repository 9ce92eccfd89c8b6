#!/usr/bin/env bash
# Install the Debian packages hdat needs (only those missing) and build it in ./build (Release).
# Usage: tools/setup.sh            (from anywhere; builds in the project root's build/)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages=(g++ cmake make git libboost-dev libeigen3-dev libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev
          gnuplot-nox libopenmpi-dev openmpi-bin
          python3-dev pybind11-dev python3-numpy python3-pandas python3-pytest python3-matplotlib python3-scipy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release ${HDAT_CMAKE_ARGS:-} >/dev/null
cmake --build "$root/build" -j"$jobs"
