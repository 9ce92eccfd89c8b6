#!/bin/bash
# Every command of a model of your own (examples/teacher_student) through hdat's command-line front end,
# with the exit code each must give: PROGRAM WORKDIR. Prints one line per command; exit 1 if any differs.
set -u
prog=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
failed=0

expect() {  # expect CODE ARGS...: run the program, compare its exit code
  local want=$1
  shift
  "$prog" "$@" > "$work/last.out" 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: exit $got, expected $want: $*"
    cat "$work/last.out"
    failed=1
  else
    echo "ok (exit $got): $*"
  fi
}

# Small settings at which the verdict decides (two sizes, 12 seeds, to t = 4).
small=(--set 'dims=[200,400]' --set seeds=12 --set t_max=4 --set n_points=12 --quiet)
drift=(--set mode=drift --set N=400 --set 'dims=[400]' --set drift_samples=20000 --set 'drift_times=[0,1]' --quiet)

expect 0 list
expect 0 list teacher-student
expect 0 curve teacher-student --out "$work/curve" --quiet
expect 0 curve teacher-student --set 't_points=[1,2,4]' --out "$work/curve_late" --quiet
expect 0 simulate teacher-student --set N=300 --set seeds=4 --set t_max=2 --out "$work/simulate" --quiet
expect 0 simulate teacher-student --set N=300 --set seeds=4 --set t_max=2 --out "$work/simulate" --quiet  # resumes
expect 0 validate teacher-student "${small[@]}" --out "$work/validate"
expect 1 validate teacher-student "${small[@]}" --set break_term=eta2 --out "$work/validate_broken"
expect 0 validate teacher-student "${drift[@]}" --out "$work/drift"
expect 1 validate teacher-student "${drift[@]}" --set break_term=eta2 --out "$work/drift_broken"
expect 0 sweep teacher-student --grid 'eta=[0.25,0.5,1]' --out "$work/sweep" --quiet
for d in curve curve_late simulate validate validate_broken drift drift_broken sweep; do
  expect 0 plot "$work/$d"
done
# Bad input: exit 2 naming the key, before any work, nothing written.
expect 2 curve teacher-student --set eta=3 --out "$work/bad"
grep -q "eta" "$work/last.out" || { echo "FAIL: the message does not name eta"; failed=1; }
grep -q "^$(basename "$prog"): " "$work/last.out" || { echo "FAIL: the message does not start with the program's name"; failed=1; }
[ -e "$work/bad" ] && { echo "FAIL: bad input wrote $work/bad"; failed=1; }
expect 2 curve teacher-student --set 'T=[[1,2],[2,1]]' --out "$work/bad"
grep -q "positive definite" "$work/last.out" || { echo "FAIL: T not positive definite is not said"; failed=1; }
exit $failed
