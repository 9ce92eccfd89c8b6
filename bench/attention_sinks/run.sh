#!/usr/bin/env bash
# Side-by-side speed of one induction training run: hdat (C++, Eigen, double) against the same model in
# PyTorch (Debian's python3-torch, float64 and float32), one thread each; plus the check that both
# compute the same loss and gradient from the same parameters.
# Usage: bench/attention_sinks/run.sh [BUILD_DIR] ; environment: WIDTH=64 BATCH=64 STEPS=3000 TORCH_STEPS=300
set -euo pipefail
build=${1:-$(dirname "$0")/../../build}
width=${WIDTH:-64}; batch=${BATCH:-64}; steps=${STEPS:-3000}; torch_steps=${TORCH_STEPS:-300}
attention=${ATTENTION:-softmax}
dump=$(mktemp --suffix=.json)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
OMP_NUM_THREADS=1 "$build/bench/attention_sinks/bench_attention_sinks" --width "$width" --batch "$batch" \
  --steps "$steps" --attention "$attention" --threads 1 --dump "$dump"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  OMP_NUM_THREADS=1 /usr/bin/python3 "$(dirname "$0")/torch_reference.py" "$dump" --steps "$torch_steps" --threads 1
else
  echo "python3-torch not installed (apt-get install python3-torch): no PyTorch comparison"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$dump"
