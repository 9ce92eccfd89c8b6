#!/usr/bin/env bash
# Sweep throughput through the hdat program: threads, and MPI ranks when the build has HDAT_MPI=ON.
#   bench/sweep/run.sh [BUILD_DIR] [--quick]
# Prints points per second from each run's run.json (throughput_points_per_second).
set -euo pipefail
build=${1:-build}
quick=${2:-}
hdat="$build/hdat"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
extra=()
[ "$quick" = "--quick" ] && extra=(--set mc_samples=4000)
args=(sweep specialization "${extra[@]}" --grid "activation=[softmax,softmax1,bayes]" --grid prior.scale=0.25:2:8
      --observable final:risk --quiet)
rate() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['this_run']['computed']} points in {r['wall_seconds']:.2f} s: {r['throughput_points_per_second']:.3f} points/s\")" "$1/run.json"; }
cores=$(nproc)
for t in $(printf '%s\n' 1 2 "$cores" | sort -nu); do
  [ "$t" -gt "$cores" ] && continue
  "$hdat" "${args[@]}" --threads "$t" --out "$tmp/threads$t" >/dev/null
  echo "threads $t: $(rate "$tmp/threads$t")"
done
if grep -q '^HDAT_MPI:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && command -v mpirun >/dev/null; then
  for n in 1 2; do
    mpirun --allow-run-as-root --oversubscribe -n "$n" "$hdat" "${args[@]}" --threads 1 --out "$tmp/ranks$n" >/dev/null
    echo "MPI ranks $n x 1 thread: $(rate "$tmp/ranks$n")"
    cut -d, -f1-4 "$tmp/ranks$n/sweep.csv" | cmp -s - <(cut -d, -f1-4 "$tmp/threads1/sweep.csv") || echo "  sweep.csv differs from the threaded one!"
  done
fi
