#!/usr/bin/env bash
# The attention-sink study of docs/sinks.md: one `hdat sinks` run per seed × attention kind
# (× heads), then `hdat sinks --collect` pools them into study.csv and sink_share.png.
# Usage: bench/sinks/study.sh OUT [HDAT] ; environment: SEEDS, KINDS, HEADS, JOBS, EXTRA
#   SEEDS="0 1 2" KINDS="softmax sigmoid_norm sigmoid_unnorm linear_norm linear_unnorm" HEADS="4" JOBS=2
#   EXTRA="--set steps=3000"   (more --set options for every run)
# Each run trains on one thread (~1 min for the defaults on this machine); JOBS runs go side by side.
set -euo pipefail
out=${1:?usage: study.sh OUT [HDAT]}
hdat=${2:-$(dirname "$0")/../../build/hdat}
seeds=${SEEDS:-0 1 2}
kinds=${KINDS:-softmax sigmoid_norm sigmoid_unnorm linear_norm linear_unnorm}
heads=${HEADS:-4}
jobs=${JOBS:-2}
extra=${EXTRA:-}
mkdir -p "$out"
runs=()
for k in $kinds; do for h in $heads; do for s in $seeds; do runs+=("$k $h $s"); done; done; done
printf '%s\n' "${runs[@]}" | xargs -P "$jobs" -L 1 bash -c '
  dir="'"$out"'/$0-h$1-s$2"
  if [ -f "$dir/sinks.json" ]; then exit 0; fi   # finished earlier: keep it
  "'"$hdat"'" sinks --quiet --set attention=$0 --set heads=$1 --set seed=$2 '"$extra"' --out "$dir" > "$dir.log" 2>&1 \
    || echo "run $0 heads=$1 seed=$2 failed (see $dir.log)"'
dirs=()
for r in "${runs[@]}"; do set -- $r; [ -f "$out/$1-h$2-s$3/sinks.json" ] && dirs+=("$out/$1-h$2-s$3"); done
"$hdat" sinks --collect "${dirs[@]}" --out "$out/study" --plot
