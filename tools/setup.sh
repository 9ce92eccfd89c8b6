#!/usr/bin/env bash
# Install the Debian packages hdat needs (only those missing) and build it in ./build (Release, Ninja).
# Usage: tools/setup.sh                     (from anywhere; builds everything in the project root's build/)
#        tools/setup.sh --target T [T...]   (builds only those targets and what they need: tools/main.sh
#                                            builds `hdat`, the program and its libraries)
#        tools/setup.sh --deps-only         (only the packages; tools/sanitize.sh and tools/fuzz.sh use it)
# HDAT_CMAKE_ARGS adds CMake options (README, "Build options"); HDAT_EXTRA_PACKAGES adds packages.
# Each step says how long it took (packages, configure, build), so that a first run shows where its time goes.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
targets=()
deps_only=0
while (($#)); do
  case "$1" in
    --deps-only) deps_only=1 ;;
    --target) shift; (($#)) || { echo "setup: --target needs a target name" >&2; exit 2; }; targets+=("$1") ;;
    *) echo "setup: unknown option '$1' (usage: tools/setup.sh [--deps-only | --target T ...])" >&2; exit 2 ;;
  esac
  shift
done
step_start=$SECONDS
step_done() { echo "setup: $1 in $((SECONDS - step_start)) s"; step_start=$SECONDS; }

packages=(g++ cmake ninja-build make git libboost-dev libeigen3-dev libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev
          libssl-dev gnuplot-nox libopenmpi-dev openmpi-bin librandom123-dev libdnnl-dev libnlopt-cxx-dev
          python3-dev pybind11-dev python3-numpy python3-pandas python3-pytest python3-matplotlib python3-scipy
          python3-venv python3-pip python3-setuptools python3-wheel
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
  step_done "packages (${#missing[@]} installed)"
else
  step_done "packages (all ${#packages[@]} present)"
fi
((deps_only)) && exit 0
jobs=$(nproc 2>/dev/null || echo 2)
# With Open MPI present (installed above) the build includes the MPI driver of `hdat sweep` (and its 2-rank
# test): decided here, so that the main job's build (--target hdat) and the test suite's are one build.
mpi=()
if command -v mpicxx >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then mpi=(-DHDAT_MPI=ON); fi
generator=()
[ -f "$root/build/CMakeCache.txt" ] || generator=(-G Ninja)  # an existing build keeps its generator
cmake -S "$root" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${mpi[@]}" ${HDAT_CMAKE_ARGS:-} >/dev/null
step_done "configure"
target_args=()
((${#targets[@]})) && target_args=(--target "${targets[@]}")
cmake --build "$root/build" -j"$jobs" "${target_args[@]}"
step_done "build (${targets[*]:-everything})"
