#!/usr/bin/env bash
# Bounded fuzzing of the parsers that read outside input, with libFuzzer (Debian's clang-14) and
# AddressSanitizer + UndefinedBehaviorSanitizer, in its own build folder (build-fuzz/):
#   fuzz_config      --config FILE.json and --set key=value against every model's parameters
#   fuzz_maps        --maps FILE.json (geometry), parsed and analysed
#   fuzz_checkpoint  --model-file (llama2.c checkpoints), read and run through the forward pass
# Each target starts from its seeds (tests/fuzz/corpus/<target>/) and runs FUZZ_SECONDS (default 120)
# seconds; the corpus it grows stays in build-fuzz/corpus/<target>/ (a rerun continues from it). A
# crash, a leak, undefined behaviour or an exception other than hdat::InputError is a finding: its input
# goes to build-fuzz/findings/<target>/ and the script exits 1. Copy such an input into
# tests/fuzz/corpus/<target>/ once it is fixed: the default suite then replays it (test_fuzz_<target>).
# Usage: tools/fuzz.sh [target ...]      (default: all three)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-fuzz"
seconds=${FUZZ_SECONDS:-120}
HDAT_EXTRA_PACKAGES="clang-14 libclang-rt-14-dev" "$root/tools/setup.sh" --deps-only
targets=("$@")
((${#targets[@]})) || targets=(fuzz_config fuzz_maps fuzz_checkpoint)
jobs=$(nproc 2>/dev/null || echo 2)
generator=()
command -v ninja >/dev/null 2>&1 && [ ! -f "$build/CMakeCache.txt" ] && generator=(-G Ninja)
# The libraries are instrumented too (HDAT_FUZZ); tests, benchmarks and the program are not needed, and
# clang refuses (rather than ignores) a precompiled header built with other macros: none here.
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
      -DHDAT_FUZZ=ON -DHDAT_PRECOMPILED_HEADERS=OFF -DHDAT_BUILD_TESTS=ON -DHDAT_BUILD_BENCHMARKS=OFF -DHDAT_BUILD_TOOLS=OFF -DHDAT_PYTHON=OFF ${HDAT_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export OMP_NUM_THREADS=1
status=0
summary=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  findings="$build/findings/$t"
  mkdir -p "$corpus" "$findings"
  exe=$(find "$build/tests/fuzz" -maxdepth 1 -name "$t" -type f)
  log="$build/$t.log"
  echo "fuzz: $t for $seconds s (log $log)"
  # -max_len 4096: configurations, maps and tiny checkpoints; -timeout 10 s per input; 2 GB of memory.
  if "$exe" "$corpus" "$root/tests/fuzz/corpus/$t" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1; then
    result="no finding"
  else
    result="FINDING (see $log, inputs in $findings/)"
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  summary+=("$t: $runs executions, corpus $(find "$corpus" -type f | wc -l) inputs, $result")
done
printf 'fuzz: %s\n' "${summary[@]}"
exit $status
