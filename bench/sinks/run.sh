#!/usr/bin/env bash
# Side-by-side speed of induction training at the authors' configuration (width 128, 2 layers, 4 heads,
# batch 256, shifted query, concatenated positions): hdat (C++, float32 with its products on oneDNN, float64 on Eigen) against the
# same model in PyTorch written the authors' way (Debian's python3-torch, float32), one thread each,
# in alternating rounds so that both see the same load. Reports wall and CPU time per step; on a shared
# machine the CPU time is what a step costs. First checks that both compute the same loss and gradient.
# Usage: bench/sinks/run.sh [BUILD_DIR] ; environment: ROUNDS=3 STEPS=40 TORCH_STEPS=20
#        ATTENTION=softmax WIDTH=128 BATCH=256 HEADS=4
set -euo pipefail
build=${1:-$(dirname "$0")/../../build}
here=$(dirname "$0")
rounds=${ROUNDS:-3}; steps=${STEPS:-40}; torch_steps=${TORCH_STEPS:-20}
attention=${ATTENTION:-softmax}; width=${WIDTH:-128}; batch=${BATCH:-256}; heads=${HEADS:-4}
bench="$build/bench/sinks/bench_sinks"
args=(--width "$width" --batch "$batch" --heads "$heads" --attention "$attention")
dump=$(mktemp --suffix=.json)
log=$(mktemp)
trap 'rm -f "$dump" "$log"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
OMP_NUM_THREADS=1 "$bench" "${args[@]}" --steps 0 --precision float64 --dump "$dump" > /dev/null
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "python3-torch not installed (apt-get install python3-torch libopenblas0-pthread): hdat only"
  OMP_NUM_THREADS=1 "$bench" "${args[@]}" --steps "$steps" --precision both
  exit 0
fi
OMP_NUM_THREADS=1 /usr/bin/python3 "$here/torch_reference.py" "$dump" --steps 0 --precision float32 | sed -n 1p  # sed reads to the end: no broken pipe
for r in $(seq "$rounds"); do
  OMP_NUM_THREADS=1 "$bench" "${args[@]}" --steps "$steps" --precision both | tee -a "$log"
  OMP_NUM_THREADS=1 /usr/bin/python3 "$here/torch_reference.py" "$dump" --steps "$torch_steps" --precision float32 \
    --skip-check --loader | tee -a "$log"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Medians over the rounds, and hdat float32 against each.
/usr/bin/python3 - "$log" <<'EOF'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    runs.setdefault(j["impl"], []).append(j)
med = {k: (statistics.median(r["steps_per_cpu_second"] for r in v), statistics.median(r["steps_per_second"] for r in v))
       for k, v in runs.items()}
ref = next(k for k in med if "float32" in k and k.startswith("hdat"))
print(f"{'implementation':<44} {'steps/CPU-s':>11} {'steps/s':>8} {'hdat float32 / it (CPU)':>24}")
for k, (cpu, wall) in med.items():
    print(f"{k:<44} {cpu:>11.2f} {wall:>8.2f} {med[ref][0] / cpu:>23.2f}x")
EOF
