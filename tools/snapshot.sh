#!/usr/bin/env bash
# Every command of every model at small fixed settings, into one folder, so that a refactor can be
# checked to keep the outputs (docs/architecture.md, "Refactoring: outputs before and after"):
#
#   tools/snapshot.sh /tmp/before                 # on the code before the change
#   ... change, rebuild ...
#   tools/snapshot.sh /tmp/after
#   tools/snapshot_compare.py /tmp/before /tmp/after
#
# Options: --hdat PATH (default: build/hdat of this checkout), --threads N (default 1: every output
# then is a function of the code alone; the results are meant not to depend on the thread count,
# and `--threads 2` checks that too), --only REGEX (only the steps whose name matches, e.g.
# 'committee|sweep'), --list (print the steps and exit).
# DIR must not exist or be empty. Each step writes DIR/<step>/ (the command's --out folder),
# DIR/<step>.stdout and .stderr; DIR/exit_codes.txt holds "<step> <exit code>" per step;
# DIR/snapshot.json the revision, program, settings and each step's duration (not compared).
# Steps whose exit code is not 0 are expected for some (a broken theory must disagree: 1); the
# snapshot records them, the comparison checks that they stay the same.
set -u -o pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
hdat="$here/build/hdat"
threads=1
only=""
list_only=0
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hdat) hdat=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --list) list_only=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "snapshot.sh: unknown option $1" >&2; exit 2 ;;
    *) [ -z "$dir" ] || { echo "snapshot.sh: one folder only" >&2; exit 2; }; dir=$1; shift ;;
  esac
done
if [ $list_only = 0 ]; then
  [ -n "$dir" ] || { echo "usage: tools/snapshot.sh DIR [--hdat PATH] [--threads N] [--only REGEX] [--list]" >&2; exit 2; }
  [ -x "$hdat" ] || { echo "snapshot.sh: no hdat program at $hdat (build it, or give --hdat PATH)" >&2; exit 2; }
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then echo "snapshot.sh: $dir is not empty" >&2; exit 2; fi
  mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
  hdat=$(cd "$(dirname "$hdat")" && pwd)/$(basename "$hdat")
fi
case "$threads" in ''|*[!0-9]*|0) echo "snapshot.sh: --threads must be a positive integer" >&2; exit 2 ;; esac
export OMP_NUM_THREADS=$threads

# ---------------------------------------------------------------------------------------------------
# The settings: small enough for seconds per step, large enough that every path of a command runs
# (escape times, several sizes, theory replicas, every drift term, events, figures).

# committee: the plateau configuration (exchangeable students: escape times) and one with every
# drift term on (eta^2, label noise, weight decay, trained second layer). The drift check runs without
# weight decay: its one-step increment carries a deterministic O(wd^2/N) part that the check has no
# allowance for (it disagrees at any N; reported with issue 33's preparation).
committee_plateau=(--set N=200 --set 'dims=[200,400]' --set seeds=4 --set t_max=150 --set n_points=30 --set test_size=200)
committee_terms=(--set K=2 --set M=2 --set eta=1.0 --set train_v=true --set noise=0.3 --set wd=0.01 --set 'v0=[1.0,0.5]'
                 --set 'vstar=[1.0,0.5]' --set N=200 --set 'dims=[100,200]' --set seeds=4 --set t_max=10 --set n_points=8
                 --set test_size=200)
committee_drift=(--set K=2 --set M=2 --set eta=1.0 --set train_v=true --set noise=0.3 --set 'v0=[1.0,0.5]'
                 --set 'vstar=[1.0,0.5]' --set N=200 --set 'dims=[100,200]' --set mode=drift --set 'drift_times=[0,2]'
                 --set drift_samples=2000)
specialization=(--set D=200 --set 'dims=[100,200]' --set seeds=3 --set t_max=3 --set n_points=6 --set mc_samples=2000
                --set test_size=300 --set theory_replicas=2)
specialization_drift=(--set D=200 --set 'dims=[100,200]' --set mc_samples=2000 --set mode=drift --set 'drift_times=[0,1]'
                      --set drift_samples=400)
polarization=(--set t_max=50 --set points=20)
polarization_drift=(--set t_max=50 --set points=20 --set mode=drift --set 'drift_times=[0,1]')
# tied-attention: matrix sensing (T = 1, convex ERM) with a 1/d trend over d = 20, 30, 40 (seconds; the
# broken denoiser disagrees), AMP against its state evolution, and the sampled softmax channel (T = 2).
tied=(--set T=1 --set 'alphas=[0.2]' --set training=convex --set d=30 --set seeds=6 --set 'dims=[20,30,40]')
tied_amp=(--set T=1 --set 'alphas=[0.2]' --set estimator=amp --set d=30 --set seeds=4 --set 'dims=[30,45,60]')
tied_softmax=(--set T=2 --set 'alphas=[0.2,0.5]' --set mc_samples=1024 --set bayes=false)

steps=()     # "name|command words" (words separated by \x1f)
step() {     # step NAME WORD...
  local name=$1; shift
  local IFS=$'\x1f'
  steps+=("$name|$*")
}
plot_step() { step "$1.plot" plot "@DIR@/$1"; }  # figures of a folder written before (existence compared)
# STEP.resume: the same command again into STEP's folder, which then holds the resumed run (its
# persisted seeds are found, not recomputed: the outputs must be the same as the first run's).

step list list
for m in committee specialization polarization tied-attention geometry sinks; do step "list.$m" list "$m"; done

step committee/curve curve committee "${committee_plateau[@]}"
plot_step committee/curve
step committee/curve_terms curve committee "${committee_terms[@]}"
step committee/simulate simulate committee "${committee_plateau[@]}"
step committee/simulate.resume simulate committee "${committee_plateau[@]}"
plot_step committee/simulate
step committee/validate validate committee "${committee_plateau[@]}"
plot_step committee/validate
step committee/validate_terms validate committee "${committee_terms[@]}"
step committee/validate_broken validate committee "${committee_terms[@]}" --set break_term=eta_squared
step committee/drift validate committee "${committee_drift[@]}"
plot_step committee/drift
step committee/drift_broken validate committee "${committee_drift[@]}" --set break_term=label_noise
step committee/sweep sweep committee --grid 'eta=[0.5,1.0]' --set t_max=150 --set n_points=20 --set N=200
plot_step committee/sweep

step specialization/curve curve specialization "${specialization[@]}" --set prune=true
plot_step specialization/curve
step specialization/simulate simulate specialization "${specialization[@]}"
plot_step specialization/simulate
step specialization/validate validate specialization "${specialization[@]}"
step specialization/validate.resume validate specialization "${specialization[@]}"
plot_step specialization/validate
step specialization/validate_broken validate specialization "${specialization[@]}" --set break_term=eta2
step specialization/drift validate specialization "${specialization_drift[@]}"
plot_step specialization/drift
step specialization/analyze analyze specialization --set t_max=3 --set n_points=6 --set mc_samples=2000 --set compare=false --set stages=false --set t_relax=20
step specialization/sweep sweep specialization --grid 'eta=[0.5,1.0]' --set t_max=3 --set n_points=6 --set mc_samples=2000
plot_step specialization/sweep

step polarization/curve curve polarization "${polarization[@]}"
step polarization/simulate simulate polarization "${polarization[@]}"
step polarization/validate validate polarization "${polarization[@]}"
step polarization/validate_broken validate polarization "${polarization[@]}" --set break_term=replicator_sign
step polarization/drift validate polarization "${polarization_drift[@]}"
step polarization/analyze analyze polarization --set claim=sign
step polarization/sweep sweep polarization --grid 'kappa=[1,2]' --set loss=regression --set t_max=50 --set points=10 --set figures=false
plot_step polarization/sweep

step tied-attention/curve curve tied-attention "${tied[@]}"
plot_step tied-attention/curve
step tied-attention/simulate simulate tied-attention "${tied[@]}"
step tied-attention/validate validate tied-attention "${tied[@]}"
plot_step tied-attention/validate
step tied-attention/validate_broken validate tied-attention "${tied[@]}" --set break_term=denoiser
step tied-attention/validate_amp validate tied-attention "${tied_amp[@]}"
step tied-attention/curve_softmax curve tied-attention "${tied_softmax[@]}"
step tied-attention/sweep sweep tied-attention --grid 'lambda=[0.01,0.1]' --set T=1 --set 'alphas=[0.5]'
plot_step tied-attention/sweep

step geometry geometry --set documents=2 --set tokens=48 --set bootstrap=50 --set random_repeats=2 --set n_max=8 \
  --set sparsify.documents=1 --set sparsify.random_orders=1
step sinks sinks --set steps=20 --set eval_every=10 --set n_train=0 --set n_eval=32 --set batch=8 --set width=16 --set heads=2
plot_step sinks

# ---------------------------------------------------------------------------------------------------

if [ $list_only = 1 ]; then
  for s in "${steps[@]}"; do echo "${s%%|*}: hdat ${s#*|}" | tr '\037' ' '; done
  exit 0
fi

revision=$(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$here" status --porcelain 2>/dev/null | grep -qv '^??' && echo true || echo false)
timings=""
started=$(date +%s.%N)
failed_to_start=0
for s in "${steps[@]}"; do
  name=${s%%|*}
  [ -n "$only" ] && ! [[ "$name" =~ $only ]] && continue
  IFS=$'\x1f' read -r -a words <<< "${s#*|}"
  words=("${words[@]//@DIR@/$dir}")
  extra=()
  case "${words[0]}" in
    list) ;;
    plot) ;;
    *) extra=(--out "$dir/${name%.resume}" --threads "$threads" --quiet) ;;
  esac
  mkdir -p "$(dirname "$dir/$name")"
  t0=$(date +%s.%N)
  "$hdat" "${words[@]}" "${extra[@]}" > "$dir/$name.stdout" 2> "$dir/$name.stderr" < /dev/null
  code=$?
  t1=$(date +%s.%N)
  seconds=$(printf '%.3f' "$(echo "$t1 - $t0" | bc)")
  echo "$name $code" >> "$dir/exit_codes.txt"
  printf '%-36s exit %3s  %7.2f s\n' "$name" "$code" "$seconds"
  timings+="${timings:+, }\"$name\": $seconds"
  [ $code = 2 ] && failed_to_start=$((failed_to_start + 1))
done
total=$(printf '%.3f' "$(echo "$(date +%s.%N) - $started" | bc)")
settings_hash=$(sed -n '/^# The settings/,/^# ------/p' "$0" | sha256sum | cut -c1-16)
cat > "$dir/snapshot.json" <<EOF
{
  "root": "$dir",
  "hdat": "$hdat",
  "git_revision": "$revision",
  "uncommitted_changes": $dirty,
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "threads": $threads,
  "only": "$only",
  "settings": "$settings_hash",
  "total_seconds": $total,
  "step_seconds": {$timings}
}
EOF
printf 'snapshot of %s in %s: %.1f s\n' "${revision:0:12}" "$dir" "$total"
if [ $failed_to_start -gt 0 ]; then
  echo "snapshot.sh: $failed_to_start step(s) exited 2 (bad input): see DIR/<step>.stderr; the settings may need updating" >&2
fi
exit 0
