#!/usr/bin/env bash
# Regenerate the figures in docs/ with the program itself: every figure below is `hdat plot` of the
# output folder of the command that the doc page shows beside it (or a figure that command draws with
# --plot), copied to docs/figures/. The runs stay in $WORK for a look at their tables.
#
#   docs/figures/regenerate.sh                 # everything (about 10 min on two cores)
#   docs/figures/regenerate.sh committee sweep # some groups: committee specialization sweep optimize python
#   HDAT=path/to/hdat WORK=dir docs/figures/regenerate.sh
#
# Not regenerated here (their own pipelines, named on their pages): tied-attention/make_figures.py,
# specialization/phase_diagram.py, attention-sinks (hdat sinks --collect ... --plot).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HDAT=${HDAT:-$ROOT/build/hdat}
WORK=${WORK:-/tmp/hdat_doc_figures}
FIG=$ROOT/docs/figures
GROUPS_WANTED=${*:-committee specialization sweep optimize python}
mkdir -p "$WORK"

wanted() { [[ " $GROUPS_WANTED " == *" $1 "* ]]; }
# run DIR -- ARGS: one hdat command into a fresh $WORK/DIR (validate's exit 1/5 is a result, not a failure).
run() {
  local dir=$WORK/$1
  shift 2
  rm -rf "$dir"
  local rc=0
  "$HDAT" "$@" --quiet --out "$dir" >"$dir.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] && [ "$rc" -ne 5 ]; then
    echo "failed ($rc): hdat $*" >&2
    cat "$dir.log" >&2
    exit "$rc"
  fi
  grep -h "verdict\|wrote" "$dir.log" | sed "s|^|  $(basename "$dir"): |" || true
}
plot() { "$HDAT" plot "$WORK/$1" >/dev/null; }
copy() { install -D -m 644 "$WORK/$1" "$FIG/$2" && echo "  -> docs/figures/$2"; }

if wanted committee; then
  echo "committee"
  run committee_curve -- curve committee
  plot committee_curve && copy committee_curve/curve.png committee/default_curve.png
fi

if wanted specialization; then
  echo "specialization"
  run spec_curve -- curve specialization
  plot spec_curve && copy spec_curve/curve.png specialization/default_curve.png
  run spec_validate -- validate specialization --set 'dims=[250,500,1000,2000]' --set seeds=16
  plot spec_validate
  copy spec_validate/validate_D2000.png specialization/validate_D2000.png
  copy spec_validate/validate_scaling.png specialization/validate_scaling.png
  run spec_drift -- validate specialization --set mode=drift --set 'dims=[2000]' --set drift_samples=20000
  plot spec_drift && copy spec_drift/validate.png specialization/drift.png
  for term in eta2 sign_gg; do run "spec_drift_$term" -- validate specialization --set mode=drift --set 'dims=[1000]' \
    --set drift_samples=20000 --set "break_term=$term"; done
fi

if wanted sweep; then
  echo "sweep"
  run sweep_final_risk -- sweep specialization --set prior.kind=discrete --set 'prior.points=[[1,0],[0,1]]' --set eta=0.2 \
    --set t_max=1000 --grid 'activation=[softmax,softmax1,bayes]' --grid prior.scale=0.5:3:6 \
    --observable final:risk --observable info:bayes_risk --plot --together
  copy sweep_final_risk/sweep.png sweep/final-risk.png
  run sweep_escape -- sweep specialization --set activation=bayes --set prior.kind=discrete --set 'prior.points=[[1,0],[0,1]]' \
    --set prior.scale=2.5 --set t_max=100 --set start=draw --grid D=100:1000000:9:log --observable info:events.plateau_end --plot
  copy sweep_escape/sweep.png sweep/escape-vs-D.png
  run sweep_polarization -- sweep polarization --set loss=regression --set t_max=1e4 --grid 'T=[2,4,8,16,32]' \
    --grid kappa=1:100:9:log --observable final:one_minus_s_top --plot --contour 0.01
  copy sweep_polarization/sweep_final_one_minus_s_top.png sweep/polarization-T-kappa.png
  run sweep_tied -- sweep tied-attention --set T=1 --grid lambda=0.01:1:7:log --grid kappa0=0.1:0.9:5 \
    --observable at:0.3:test_error --plot
  copy sweep_tied/sweep_test_error_at_0.3.png sweep/tied-lambda-kappa0.png
fi

if wanted optimize; then
  echo "optimize"
  run optimize_dropout -- optimize committee --set K=2 --set M=1 --set eta=1 --set noise=0.2 --set init_std=0 \
    --control dropout_keep --control test_scale --bounds test_scale=0:1 --intervals 50 --t-final 5 \
    --confirm 10000 --confirm-seeds 64
  plot optimize_dropout && copy optimize_dropout/optimize.png optimize/committee_dropout.png
  run optimize_spec40 -- optimize specialization --set mc_samples=800 --control eta --bounds eta=0:3 --intervals 6 \
    --t-final 40 --rtol 1e-5 --max-evaluations 25 --confirm 1000 --confirm-seeds 24
  plot optimize_spec40 && copy optimize_spec40/optimize.png optimize/specialization_t40.png
fi

if wanted python; then
  echo "python"
  PYTHONPATH=$ROOT/build/python /usr/bin/python3 "$ROOT/examples/python/specialization.py" "$WORK/python" >"$WORK/python.log" 2>&1
  copy python/specialization.png python/specialization.png
fi
