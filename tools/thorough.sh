#!/usr/bin/env bash
# The slow, thorough checks (large D, many seeds, long runs): not part of the default suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
cd "$root/build"
ctest --output-on-failure -L thorough "$@"
