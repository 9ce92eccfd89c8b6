#!/usr/bin/env bash
# The whole default test suite: installs what is missing, builds everything (after tools/main.sh: the
# tests, benchmarks and Python module it left out), runs every test except the slow `thorough` ones
# (those run with tools/thorough.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
jobs=$(nproc 2>/dev/null || echo 2)
cd "$root/build"
ctest --output-on-failure -j"$jobs" -LE thorough "$@"   # ctest's last lines (totals, time) end the output, as CI reads them
