#!/usr/bin/env bash
# The full engine's online-SGD step against the same step in PyTorch (autograd, one thread), side by
# side in one run, alternating rounds: D = 10^4, L = 32, H = 4, softmax (issue 17).
#   bench/specialization/side_by_side.sh [BUILD_DIR] [ROUNDS]
# Needs /usr/bin/python3 with python3-torch (Debian); prints each JSON line and the ratios of medians.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-build}
rounds=${2:-2}
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "side_by_side: python3-torch is not installed (apt-get install python3-torch libopenblas0-pthread)" >&2
  exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq "$rounds"); do
  OMP_NUM_THREADS=1 "$build/bench/specialization/bench_specialization" --step | tee -a "$out"
  OMP_NUM_THREADS=1 /usr/bin/python3 "$here/torch_step.py" --dtype float64 | tee -a "$out"
  OMP_NUM_THREADS=1 /usr/bin/python3 "$here/torch_step.py" --dtype float32 | tee -a "$out"
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(impl, dtype):
    return statistics.median(r["ms_per_step"] for r in rows if r["implementation"].startswith(impl) and r["dtype"] == dtype)
h = med("hdat", "float64")
for dtype in ("float64", "float32"):
    t = med("pytorch", dtype)
    print(f"PyTorch {dtype}: {t:.3f} ms/step; hdat full engine (float64): {h:.3f} ms/step; hdat is {t / h:.1f}x faster")
r = [x for x in rows if x["implementation"].startswith("hdat")][-1]
roof = 32 * 10000 / r["draws_per_s"] + (32 * 10000 * 5 + 10000 * 32 * 4) / r["fma_per_s"]
print(f"roofline of this core: {roof * 1e3:.3f} ms/step ({r['draws_per_s'] / 1e6:.0f} M draws/s, {r['fma_per_s'] / 1e9:.1f} GFMA/s); measured at {roof * 1e3 / h:.0%} of it")
PY
