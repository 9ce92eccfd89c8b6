#!/usr/bin/env bash
# The false-alarm rate and the power of validate's criterion (docs/validation.md, "Measured"):
#   false alarm: the correct theory of committee and specialization, small sizes, over many base seeds
#                (each base seed a new set of runs): the fraction called DISAGREE must stay <= false_alarm;
#   power:       the same settings with each break_term of the model: the fraction called DISAGREE.
# Every run is one `hdat validate` (nice -n 10, one thread); a finished run is not run again, so the
# same command resumes. Results: $OUT/runs.csv (one line per run) and $OUT/summary.md (the table).
#
#   bench/verdict/far_study.sh                     # everything (about 15 min on two cores)
#   BASES=20 SPEC_BASES=5 POWER_BASES=3 bench/verdict/far_study.sh   # a quick look
#   HDAT=path/to/hdat OUT=dir JOBS=2 bench/verdict/far_study.sh
set -uo pipefail

HDAT=${HDAT:-build/hdat}
OUT=${OUT:-/tmp/hdat_far_study}
BASES=${BASES:-400}              # base seeds per committee false-alarm configuration
SPEC_BASES=${SPEC_BASES:-100}     # base seeds per specialization false-alarm configuration (slower)
POWER_BASES=${POWER_BASES:-20}    # base seeds per broken term
JOBS=${JOBS:-2}
PYTHON=${PYTHON:-/usr/bin/python3}
mkdir -p "$OUT"

# The configurations: label | model | settings (space separated --set values) | break_term | bases.
# committee_plateau: the defaults (K = M = 2, erf, the symmetric plateau), the issue's measurement.
# committee_terms:   every term on (the registry's smoke configuration): each break_term acts.
# committee_issue:   the issue's measurement (dims [250, 500, 1000], t_max 50) at 8 seeds: more sizes, more entries.
# specialization:    H = 2, a sampled theory (2 replicas), 24 seeds: 4 seeds are UNDECIDED there (the
#                    verdict asks for about 23), so a false-alarm count at 4 would measure nothing.
COMMITTEE_TERMS="K=2 M=2 eta=1.0 train_v=true noise=0.3 wd=0.01 v0=[1.0,0.5] vstar=[1.0,0.5] test_size=500 n_points=12"
SPEC="D=400 t_max=3 n_points=8 mc_samples=6000 test_size=2000 theory_replicas=2"
configs=(
  "committee_plateau_s4|committee|dims=[250,500] seeds=4 t_max=50 n_points=40|none|$BASES"
  "committee_terms_s4|committee|$COMMITTEE_TERMS dims=[250,500] seeds=4 t_max=20|none|$BASES"
  "committee_issue_s8|committee|dims=[250,500,1000] seeds=8 t_max=50|none|$BASES"
  "specialization_s24|specialization|$SPEC dims=[300,600] seeds=24|none|$SPEC_BASES"
)
for term in eta_linear eta_squared label_noise weight_decay second_layer; do
  configs+=("committee_terms_s4|committee|$COMMITTEE_TERMS dims=[250,500] seeds=4 t_max=20|$term|$POWER_BASES")
done
for term in eta2 sign_gg; do
  configs+=("specialization_s24|specialization|$SPEC dims=[300,600] seeds=24|$term|$POWER_BASES")
done

# One run: label model settings term base -> a line of runs.csv (label,term,base,exit,verdict,tests,critical,worst).
one_run() {
  local label=$1 model=$2 settings=$3 term=$4 base=$5
  local dir="$OUT/runs/$label/$term/b$base"
  [ -f "$dir/line" ] && return 0
  local sets=(--set "seed=$base")
  for s in $settings; do sets+=(--set "$s"); done
  [ "$term" != none ] && sets+=(--set "break_term=$term")
  rm -rf "$dir.tmp" && mkdir -p "$(dirname "$dir")"
  nice -n 10 "$HDAT" validate "$model" "${sets[@]}" --threads 1 --quiet --out "$dir.tmp" >/dev/null 2>"$dir.stderr"
  local rc=$?
  local fields
  fields=$("$PYTHON" - "$dir.tmp/validate.json" <<'EOF'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception:
    print("none,,,"); sys.exit()
worst = v.get("worst", {}).get("deviation_over_allowed")
print(f'{v.get("verdict")},{v.get("tests","")},{v.get("critical_value","")},{worst if worst is not None else ""}')
EOF
)
  mkdir -p "$dir" && mv "$dir.tmp"/validate.json "$dir/" 2>/dev/null
  rm -rf "$dir.tmp"
  echo "$label,$term,$base,$rc,$fields" >"$dir/line"
}
export -f one_run
export HDAT OUT PYTHON

for c in "${configs[@]}"; do
  IFS='|' read -r label model settings term bases <<<"$c"
  for ((b = 0; b < bases; b++)); do printf '%s\0%s\0%s\0%s\0%s\0' "$label" "$model" "$settings" "$term" "$b"; done
done | xargs -0 -n 5 -P "$JOBS" bash -c 'one_run "$@"' _

echo "label,term,base,exit,verdict,tests,critical_value,worst_over_allowed" >"$OUT/runs.csv"
find "$OUT/runs" -name line -exec cat {} + | sort >>"$OUT/runs.csv"

# The table: per configuration and term, the verdicts, and the DISAGREE rate with its exact 95%
# (Clopper-Pearson) interval.
"$PYTHON" - "$OUT/runs.csv" >"$OUT/summary.md" <<'EOF'
import csv, math, sys
from collections import defaultdict

def binom_cdf(k, n, p):
    return sum(math.comb(n, i) * p**i * (1 - p)**(n - i) for i in range(k + 1))

def clopper_pearson(k, n, level=0.95):
    a = (1 - level) / 2
    def solve(f):  # f increasing in p
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            (lo, hi) = (mid, hi) if f(mid) < 0 else (lo, mid)
        return (lo + hi) / 2
    lower = 0.0 if k == 0 else solve(lambda p: (1 - binom_cdf(k - 1, n, p)) - a)
    upper = 1.0 if k == n else solve(lambda p: a - binom_cdf(k, n, p))
    return lower, upper

rows = list(csv.DictReader(open(sys.argv[1])))
groups = defaultdict(list)
for r in rows:
    groups[(r["label"], r["term"])].append(r)
print("| configuration | broken term | runs | agree | undecided | disagree | DISAGREE rate (95% interval) | other exits | critical value |")
print("|---|---|---|---|---|---|---|---|---|")
for (label, term), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "none", kv[0][1])):
    n = len(rs)
    count = lambda v: sum(r["verdict"] == v for r in rs)
    k = count("disagree")
    lo, hi = clopper_pearson(k, n)
    other = sum(r["exit"] not in ("0", "1", "5") for r in rs)
    crit = sorted(float(r["critical_value"]) for r in rs if r["critical_value"] not in ("", "None"))
    crit_text = f"{crit[len(crit) // 2]:.3g}" if crit else "-"
    print(f"| {label} | {term} | {n} | {count('agree')} | {count('undecided')} | {k} | {k / n:.2f} ({lo:.2f}-{hi:.2f}) | {other} | {crit_text} |")
EOF
cat "$OUT/summary.md"
