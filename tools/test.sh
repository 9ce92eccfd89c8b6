#!/usr/bin/env bash
# The whole default test suite: installs what is missing, builds, runs every test except the slow
# `thorough` ones (those run with tools/thorough.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# With Open MPI present the build includes the MPI driver of `hdat sweep` and its 2-rank test.
have_mpi() { command -v mpicxx >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; }
if have_mpi; then export HDAT_CMAKE_ARGS="-DHDAT_MPI=ON ${HDAT_CMAKE_ARGS:-}"; fi
"$root/tools/setup.sh"
jobs=$(nproc 2>/dev/null || echo 2)
if have_mpi && ! grep -q '^HDAT_MPI:BOOL=ON' "$root/build/CMakeCache.txt"; then  # setup.sh just installed Open MPI
  cmake -S "$root" -B "$root/build" -DHDAT_MPI=ON >/dev/null && cmake --build "$root/build" -j"$jobs"
fi
cd "$root/build"
ctest --output-on-failure -j"$jobs" -LE thorough "$@"
