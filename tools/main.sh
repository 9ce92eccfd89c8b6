#!/usr/bin/env bash
# The main job: install what is missing, build the `hdat` program (and only what it needs: the
# libraries; the tests, benchmarks and Python module are built by tools/test.sh), compute the default
# `specialization` learning curve (the unspecialized plateau, then specialization), print its summary,
# and draw it. Output: out/specialization/{curve.csv, run.json, curve.png, curve.svg}.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh" --target hdat
out="$root/out/specialization"
"$root/build/hdat" curve specialization --out "$out" "$@"
"$root/build/hdat" plot "$out"
echo "figure: $out/curve.png (and .svg)"
