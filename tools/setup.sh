#!/usr/bin/env bash
# Install the Debian packages hdat needs (only those missing) and build it in ./build (Release, Ninja).
# Usage: tools/setup.sh               (from anywhere; builds in the project root's build/)
#        tools/setup.sh --deps-only   (only the packages; tools/sanitize.sh and tools/fuzz.sh use it)
# HDAT_CMAKE_ARGS adds CMake options (README, "Build options"); HDAT_EXTRA_PACKAGES adds packages.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages=(g++ cmake ninja-build make git libboost-dev libeigen3-dev libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev
          libssl-dev gnuplot-nox libopenmpi-dev openmpi-bin librandom123-dev libdnnl-dev libnlopt-cxx-dev
          python3-dev pybind11-dev python3-numpy python3-pandas python3-pytest python3-matplotlib python3-scipy
          ${HDAT_EXTRA_PACKAGES:-})
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
[ "${1:-}" = "--deps-only" ] && exit 0
jobs=$(nproc 2>/dev/null || echo 2)
generator=()
[ -f "$root/build/CMakeCache.txt" ] || generator=(-G Ninja)  # an existing build keeps its generator
cmake -S "$root" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${HDAT_CMAKE_ARGS:-} >/dev/null
cmake --build "$root/build" -j"$jobs"
