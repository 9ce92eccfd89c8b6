#!/usr/bin/env python3
"""Table and test for seeds.sh: per run (side, seed) the induction accuracy at every checkpoint (every
391 steps = one epoch) and the last layer's sink scores; then, at every checkpoint both sides have, a
two-sided Mann–Whitney U test of hdat's accuracies against PyTorch's, and the same test on the first
checkpoint at which accuracy exceeds 0.5 (never: ranked after every checkpoint).
Reads OUT/hdat_K_sS.json (bench_sinks --replay) and OUT/torch_K_sS.json (torch_train.py --authors).
Usage: /usr/bin/python3 seeds_summary.py OUT [--attention linear_unnorm] [--markdown]
"""
import argparse
import glob
import json
import math
import os
import re

from scipy.stats import mannwhitneyu


def load(out, attention):
    runs = []
    for path in sorted(glob.glob(os.path.join(out, f"hdat_{attention}_s*.json"))):
        meta = json.load(open(path))
        lines = meta["hdat"]["curve"].strip().split("\n")[1:]
        curve = {int(float(r.split(",")[0])): float(r.split(",")[3]) for r in lines}
        curve.pop(0, None)
        runs.append(("hdat", meta["config"]["seed"], curve, meta["hdat"]["sink_score"]))
    for path in sorted(glob.glob(os.path.join(out, f"torch_{attention}_s*.json"))):
        r = json.loads(open(path).read().strip().split("\n")[-1])
        curve = {391 * e: a for e, a in r["curve"]}
        runs.append(("torch", r["seed"], curve, r["sink_score"]))
    return runs


def first_above(curve, level=0.5):
    for step in sorted(curve):
        if curve[step] > level:
            return step
    return math.inf


def test(a, b):
    if len(a) < 2 or len(b) < 2:
        return float("nan"), float("nan")
    ties = len(set(a + b)) < len(a + b) or any(math.isinf(x) for x in a + b)
    finite = [x if not math.isinf(x) else 1e9 for x in a], [x if not math.isinf(x) else 1e9 for x in b]
    r = mannwhitneyu(*finite, alternative="two-sided", method="asymptotic" if ties else "exact")
    return r.statistic, r.pvalue


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--attention", default="linear_unnorm")
    args = ap.parse_args()
    runs = sorted(load(args.out, args.attention), key=lambda r: (r[0], r[1]))
    steps = sorted({s for r in runs for s in r[2]})
    print("| side | seed | accuracy after " + " / ".join(map(str, steps)) + " steps | first > 0.5 | layer-2 sink scores |")
    print("|---|---|---|---|---|")
    for side, seed, curve, sink in runs:
        accs = " / ".join(f"{curve[s]:.3f}" if s in curve else "—" for s in steps)
        fa = first_above(curve)
        print(f"| {side} | {seed} | {accs} | {'never' if math.isinf(fa) else fa} | "
              + " ".join(f"{x:.3f}" for x in sink) + " |")
    print()
    for s in steps:
        a = [r[2][s] for r in runs if r[0] == "hdat" and s in r[2]]
        b = [r[2][s] for r in runs if r[0] == "torch" and s in r[2]]
        if a and b:
            u, p = test(a, b)
            med = lambda x: sorted(x)[len(x) // 2] if len(x) % 2 else sum(sorted(x)[len(x) // 2 - 1:len(x) // 2 + 1]) / 2
            print(f"step {s}: hdat n={len(a)} median {med(a):.3f} mean {sum(a)/len(a):.3f}; "
                  f"torch n={len(b)} median {med(b):.3f} mean {sum(b)/len(b):.3f}; Mann-Whitney U={u:.1f} p={p:.3g}")
    common = max((s for s in steps if all(s in r[2] for r in runs)), default=None)
    if common:
        a = [first_above({k: v for k, v in r[2].items() if k <= common}) for r in runs if r[0] == "hdat"]
        b = [first_above({k: v for k, v in r[2].items() if k <= common}) for r in runs if r[0] == "torch"]
        u, p = test(a, b)
        print(f"first checkpoint > 0.5 (within {common} steps): hdat {a}; torch {b}; Mann-Whitney U={u:.1f} p={p:.3g}")


if __name__ == "__main__":
    main()
