#!/usr/bin/env bash
# Seed spread of unnormalised linear attention (or another kind) at the authors' configuration, hdat
# against the authors' model and data in PyTorch (torch_train.py --authors), one training at a time on
# one thread each; then the per-seed table and a two-sided Mann–Whitney test (seeds_summary.py).
# hdat runs through `bench_sinks --replay` (the same code path as `hdat sinks`, and it records
# the stream, so that `torch_train.py --replay OUT/hdat_sS` can retrain any of them in PyTorch).
# Usage: bench/sinks/seeds.sh OUT [BUILD_DIR]
#   environment: SEEDS="0 1 2 3 4 5" EPOCHS=3 (391 steps each) ATTENTION=linear_unnorm SIDES="hdat torch"
#                BENCH=PATH (the bench binary; default BUILD_DIR/bench/sinks/...) NICE=5 KEEP_BIN=0 (delete the recorded streams, 26 MB per 3 epochs, after each hdat run)
set -euo pipefail
out=${1:?usage: seeds.sh OUT [BUILD_DIR]}
build=${2:-$(dirname "$0")/../../build}
here=$(cd "$(dirname "$0")" && pwd)
seeds=${SEEDS:-0 1 2 3 4 5}; epochs=${EPOCHS:-3}; attention=${ATTENTION:-linear_unnorm}
sides=${SIDES:-hdat torch}; nice=${NICE:-5}
bench=${BENCH:-$build/bench/sinks/bench_sinks}
steps=$((391 * epochs))
mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
for s in $seeds; do
  for side in $sides; do
    if [ "$side" = hdat ]; then
      stem="$out/hdat_${attention}_s$s"
      [ -f "$stem.json" ] && continue
      nice -n "$nice" "$bench" --replay "$stem" --attention "$attention" --seed "$s" --steps "$steps" \
        --precision float32 --authors-data 1 > "$stem.log" 2>&1
      [ "${KEEP_BIN:-0}" = 1 ] || rm -f "$stem.bin"
    else
      log="$out/torch_${attention}_s$s.json"
      [ -s "$log" ] && continue
      nice -n "$nice" /usr/bin/python3 "$here/torch_train.py" --authors --attention "$attention" --seed "$s" \
        --epochs "$epochs" --precision float32 --threads 1 > "$log.part"
      mv "$log.part" "$log"
    fi
  done
done
/usr/bin/python3 "$here/seeds_summary.py" "$out" --attention "$attention"
