#!/usr/bin/env bash
# The whole default test suite built with AddressSanitizer + UndefinedBehaviorSanitizer, in its own
# build folder (build-sanitize/): any finding (memory error, leak, undefined behaviour) stops the
# program and fails its test. Usage: tools/sanitize.sh [ctest arguments, e.g. -R test_core or -L thorough]
# Optimised with debug information (RelWithDebInfo) so that reports name lines; about 3x slower than
# the Release suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-sanitize"
"$root/tools/setup.sh" --deps-only
jobs=$(nproc 2>/dev/null || echo 2)
mpi=OFF
if command -v mpicxx >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then mpi=ON; fi
generator=()
command -v ninja >/dev/null 2>&1 && [ ! -f "$build/CMakeCache.txt" ] && generator=(-G Ninja)
# Without the Python module: an instrumented extension loaded into Debian's uninstrumented python3 would
# need the sanitizer runtimes preloaded, and the Python layer's C++ is the library the suite covers.
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHDAT_SANITIZE=ON -DHDAT_MPI=$mpi -DHDAT_PYTHON=OFF \
      ${HDAT_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$jobs"
# halt_on_error: the first finding ends the run; detect_leaks: leaks are findings too. Open MPI's own
# allocations at exit are not ours (tests/sanitize.supp lists them).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
cd "$build"
if [ $# -eq 0 ]; then set -- -LE thorough; fi
ctest --output-on-failure -j"$jobs" --timeout 1800 "$@"
