#!/usr/bin/env bash
# The whole default test suite: installs what is missing, builds, runs every test except the slow
# `thorough` ones (those run with tools/thorough.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh" --deps-only
# With Open MPI present (setup.sh installs it) the build includes the MPI driver of `hdat sweep` and its
# 2-rank test.
if command -v mpicxx >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  export HDAT_CMAKE_ARGS="-DHDAT_MPI=ON ${HDAT_CMAKE_ARGS:-}"
fi
"$root/tools/setup.sh"
jobs=$(nproc 2>/dev/null || echo 2)
cd "$root/build"
ctest --output-on-failure -j"$jobs" -LE thorough "$@"
