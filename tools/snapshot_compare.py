#!/usr/bin/python3
"""Compare two output snapshots of tools/snapshot.sh, file by file (docs/architecture.md,
"Refactoring: outputs before and after").

    tools/snapshot_compare.py BEFORE AFTER [--rtol R] [--atol A] [--max-lines N] [--strict-text]

  CSV     by header, then cell by cell: numbers equal when |a - b| <= atol + rtol * max(|a|, |b|)
          (default rtol = atol = 0: the same double; NaN equals NaN), text cells exactly after the
          MASKS. Columns named like a timing (TIMING_NAME) are not compared.
  JSON    by keys, recursively, numbers as in CSV, strings after the MASKS; the timings
          (TIMING_NAME: every key containing "seconds" or "per_second") and IGNORED_KEYS (date, host,
          git_revision, compiler) are skipped wherever they occur.
  figures (png, svg, pdf, eps) by existence only.
  text    (the commands' stdout, exit codes, gnuplot scripts, any other file) line by line, after
          masking the durations a command prints (MASKS); with a tolerance, lines whose words agree
          and whose numbers agree within it are equal.
Everywhere the snapshot's own folder and the hdat program it ran (snapshot.json) are replaced by
<SNAPSHOT> and <HDAT>, so that two snapshots in different places compare. Persisted seed files are
named by the simulation hash; it is replaced by <HASH> in the file name (a hash that changed is
reported as a note: it names cached seeds, it is not an output).

Exit status: 0 the snapshots agree, 1 they differ, 2 bad usage.
"""

import argparse
import csv
import json
import math
import os
import re
import sys

# Keys (JSON) and columns (CSV) whose values measure the machine, not the computation: every name
# containing "seconds" or "per_second" (wall_seconds, theory_seconds, simulation_seconds, rhs_seconds,
# seconds_per_run, seconds_per_iteration, microseconds_per_J, point_seconds, timing_seconds (an object
# of durations), steps_per_second, throughput_points_per_second, ...), and when, where and by which
# build a run was made.
TIMING_NAME = re.compile(r"seconds|per_second")
IGNORED_KEYS = {"date", "host", "git_revision", "compiler"}


def ignored(name):
    return name in IGNORED_KEYS or TIMING_NAME.search(name) is not None


FIGURE_EXTENSIONS = {".png", ".svg", ".pdf", ".eps"}

# Durations and rates in printed text (a command's summary, a point's summary in a sweep, an AMP
# report): "(0.52 s)", "in 1.3 s", "138 points/s", "0.0222 s/iteration", "12.5 steps/s".
NUMBER = r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?"
MASKS = [
    (re.compile(NUMBER + r"(\s*[A-Za-z]+)?/s\b"), "<RATE>"),
    (re.compile(NUMBER + r"\s*(ms|s)\b"), "<TIME>"),
    (re.compile(NUMBER + r"\s*(steps per second|seconds)\b"), "<TIME>"),
]

HASH_IN_NAME = re.compile(r"(^|/)seeds/([0-9a-f]{16})_")


class Report:
    def __init__(self, max_lines):
        self.max_lines = max_lines
        self.files_differing = 0
        self.lines = []
        self.notes = []

    def file(self, rel, diffs, more=0):
        if not diffs:
            return
        self.files_differing += 1
        self.lines.append(f"~ {rel}")
        for d in diffs[: self.max_lines]:
            self.lines.append(f"    {d}")
        hidden = len(diffs) - self.max_lines + more
        if hidden > 0:
            self.lines.append(f"    ... and {hidden} more")


def load_meta(root):
    path = os.path.join(root, "snapshot.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def normalizer(root, meta):
    """Replaces what names this snapshot's place and program in a string."""
    pairs = []
    for value, token in ((os.path.realpath(root), "<SNAPSHOT>"), (os.path.abspath(root), "<SNAPSHOT>"),
                         (meta.get("root", ""), "<SNAPSHOT>"), (meta.get("hdat", ""), "<HDAT>")):
        if value and (value, token) not in pairs:
            pairs.append((value, token))
    pairs.sort(key=lambda p: -len(p[0]))  # the longest first: a program inside the snapshot folder

    def norm(text):
        for value, token in pairs:
            text = text.replace(value, token)
        return text

    return norm


def files_of(root):
    """Relative path (seed hashes replaced) -> (real relative path, the hash or None)."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            rel = os.path.relpath(os.path.join(dirpath, n), root)
            m = HASH_IN_NAME.search(rel)
            key = HASH_IN_NAME.sub(lambda x: f"{x.group(1)}seeds/<HASH>_", rel) if m else rel
            out[key] = (rel, m.group(2) if m else None)
    return out


def as_number(text):
    try:
        return float(text)
    except ValueError:
        return None


def numbers_differ(a, b, rtol, atol):
    if a == b or (math.isnan(a) and math.isnan(b)):
        return False
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return True
    return abs(a - b) > atol + rtol * max(abs(a), abs(b))


def relative(a, b):
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale > 0 and math.isfinite(scale) else float("inf")


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return (rows[0], rows[1:]) if rows else ([], [])


def compare_csv(pa, pb, na, nb, rtol, atol):
    ha, ra = read_csv(pa)
    hb, rb = read_csv(pb)
    diffs = []
    if ha != hb:
        only_a = [c for c in ha if c not in hb]
        only_b = [c for c in hb if c not in ha]
        if only_a:
            diffs.append(f"columns only before: {', '.join(only_a)}")
        if only_b:
            diffs.append(f"columns only after: {', '.join(only_b)}")
        if not only_a and not only_b:
            diffs.append("the same columns in another order")
    if len(ra) != len(rb):
        diffs.append(f"rows: {len(ra)} before, {len(rb)} after")
    ia = {c: k for k, c in enumerate(ha)}
    ib = {c: k for k, c in enumerate(hb)}
    shared = [c for c in ha if c in ib and not ignored(c)]
    key = ha[0] if ha else ""
    worst = {}  # column -> (relative difference, row, a, b) of its largest numeric difference
    cells = 0
    text_cells = []
    for r in range(min(len(ra), len(rb))):
        for c in shared:
            a, b = ra[r][ia[c]], rb[r][ib[c]]
            if a == b:
                continue
            xa, xb = as_number(a), as_number(b)
            if xa is not None and xb is not None:
                if not numbers_differ(xa, xb, rtol, atol):
                    continue
                cells += 1
                rel = relative(xa, xb)
                if c not in worst or rel > worst[c][0]:
                    worst[c] = (rel, r, a, b)
            elif not lines_equal(masked(a, na), masked(b, nb), rtol, atol):
                cells += 1
                text_cells.append(f"row {r} ({key} = {ra[r][0]}), {c}: {a!r} -> {b!r}")
    if cells:
        diffs.append(f"{cells} cells differ in {len(worst) + len({t.split(', ')[1] for t in text_cells})} columns"
                     f"{'' if rtol == 0 and atol == 0 else f' beyond rtol {rtol:g}, atol {atol:g}'}")
    for c, (rel, r, a, b) in sorted(worst.items(), key=lambda kv: -kv[1][0]):
        diffs.append(f"{c}: largest relative difference {rel:.3g} at row {r} ({key} = {ra[r][0]}): {a} -> {b}")
    diffs.extend(text_cells)
    return diffs


def compare_json_values(a, b, path, na, nb, rtol, atol, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if ignored(k):
                continue
            if k not in b:
                out.append(f"{path}{k}: only before ({short(a[k])})")
            else:
                compare_json_values(a[k], b[k], f"{path}{k}.", na, nb, rtol, atol, out)
        for k in b:
            if k not in a and not ignored(k):
                out.append(f"{path}{k}: only after ({short(b[k])})")
        return
    where = path[:-1] if path.endswith(".") else path
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} entries before, {len(b)} after")
        for k in range(min(len(a), len(b))):
            compare_json_values(a[k], b[k], f"{where}[{k}].", na, nb, rtol, atol, out)
        return
    numeric = (int, float)
    if isinstance(a, numeric) and isinstance(b, numeric) and not isinstance(a, bool) and not isinstance(b, bool):
        if numbers_differ(float(a), float(b), rtol, atol):
            out.append(f"{where}: {a!r} -> {b!r} (relative {relative(float(a), float(b)):.3g})")
        return
    if isinstance(a, str) and isinstance(b, str):
        ma, mb = masked(a, na), masked(b, nb)
        if not lines_equal(ma, mb, rtol, atol):
            out.append(f"{where}: {text_difference(ma, mb)}")
        return
    if a != b:
        out.append(f"{where}: {short(a)} -> {short(b)}")


def short(v, width=100):
    text = json.dumps(v) if not isinstance(v, str) else repr(v)
    return text if len(text) <= width else text[: width - 3] + "..."


def text_difference(a, b, context=40):
    """Two strings around their first difference."""
    k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    lo = max(0, k - context)
    cut = lambda t: ("..." if lo else "") + t[lo : k + context] + ("..." if len(t) > k + context else "")
    return f"{cut(a)!r} -> {cut(b)!r}"


def compare_json(pa, pb, na, nb, rtol, atol):
    try:
        with open(pa) as f:
            a = json.load(f)
        with open(pb) as f:
            b = json.load(f)
    except ValueError as e:
        return compare_text(pa, pb, na, nb, rtol, atol) or [f"not JSON: {e}"]
    out = []
    compare_json_values(a, b, "", na, nb, rtol, atol, out)
    return out


def masked(line, norm):
    line = norm(line)
    for pattern, token in MASKS:
        line = pattern.sub(token, line)
    return line


NUMBER_TOKEN = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b", re.I)


def lines_equal(a, b, rtol, atol):
    """Equal text, or the same words around numbers equal within the tolerance (data in gnuplot
    scripts, numbers in summaries)."""
    if a == b:
        return True
    if rtol == 0 and atol == 0:
        return False
    if NUMBER_TOKEN.sub("#", a) != NUMBER_TOKEN.sub("#", b):
        return False
    xs, ys = NUMBER_TOKEN.findall(a), NUMBER_TOKEN.findall(b)
    return all(not numbers_differ(float(x), float(y), rtol, atol) for x, y in zip(xs, ys))


def compare_text(pa, pb, na, nb, rtol=0.0, atol=0.0):
    with open(pa, errors="replace") as f:
        la = [masked(l.rstrip("\n"), na) for l in f]
    with open(pb, errors="replace") as f:
        lb = [masked(l.rstrip("\n"), nb) for l in f]
    if la == lb:
        return []
    out = []
    if len(la) != len(lb):
        out.append(f"lines: {len(la)} before, {len(lb)} after")
    for k in range(max(len(la), len(lb))):
        a = la[k] if k < len(la) else "<none>"
        b = lb[k] if k < len(lb) else "<none>"
        if not lines_equal(a, b, rtol, atol):
            out.append(f"line {k + 1}: {a!r}")
            out.append(f"      -> {b!r}")
    return out


def compare_exit_codes(pa, pb):
    """exit_codes.txt: "<step> <code>" per line; by step, so that an added step shifts nothing."""
    def read(path):
        with open(path) as f:
            return dict(line.split() for line in f if line.strip())
    a, b = read(pa), read(pb)
    out = [f"{k}: exit {a[k]} -> {b[k]}" for k in a if k in b and a[k] != b[k]]
    out += [f"{k}: only before (exit {a[k]})" for k in a if k not in b]
    out += [f"{k}: only after (exit {b[k]})" for k in b if k not in a]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rtol", type=float, default=0.0, help="relative tolerance of numbers (default 0: exact)")
    ap.add_argument("--atol", type=float, default=0.0, help="absolute tolerance of numbers (default 0)")
    ap.add_argument("--max-lines", type=int, default=8, help="differences listed per file (default 8)")
    args = ap.parse_args()
    for d in (args.before, args.after):
        if not os.path.isdir(d):
            print(f"snapshot_compare: {d} is not a folder", file=sys.stderr)
            return 2
    if args.rtol < 0 or args.atol < 0 or args.max_lines < 1:
        print("snapshot_compare: --rtol and --atol must be >= 0, --max-lines >= 1", file=sys.stderr)
        return 2

    na = normalizer(args.before, load_meta(args.before))
    nb = normalizer(args.after, load_meta(args.after))
    fa, fb = files_of(args.before), files_of(args.after)
    report = Report(args.max_lines)
    only_before = sorted(k for k in fa if k not in fb)
    only_after = sorted(k for k in fb if k not in fa)
    hashes_changed = set()
    compared = 0
    for key in sorted(k for k in fa if k in fb):
        rel_a, hash_a = fa[key]
        rel_b, hash_b = fb[key]
        if hash_a != hash_b:
            hashes_changed.add((hash_a, hash_b))
        if key == "snapshot.json":
            continue
        compared += 1
        pa, pb = os.path.join(args.before, rel_a), os.path.join(args.after, rel_b)
        ext = os.path.splitext(key)[1].lower()
        if ext in FIGURE_EXTENSIONS:
            continue
        if key == "exit_codes.txt":
            diffs = compare_exit_codes(pa, pb)
        elif ext == ".csv":
            diffs = compare_csv(pa, pb, na, nb, args.rtol, args.atol)
        elif ext == ".json":
            diffs = compare_json(pa, pb, na, nb, args.rtol, args.atol)
        else:
            diffs = compare_text(pa, pb, na, nb, args.rtol, args.atol)
        report.file(key, diffs)

    ma, mb = load_meta(args.before), load_meta(args.after)
    print(f"before: {args.before} ({ma.get('git_revision', '?')}, {ma.get('date', '?')})")
    print(f"after:  {args.after} ({mb.get('git_revision', '?')}, {mb.get('date', '?')})")
    if ma and mb:
        if ma.get("settings") != mb.get("settings"):
            report.notes.append("the two snapshots were taken with different settings of tools/snapshot.sh (snapshot.json)")
        if ma.get("threads") != mb.get("threads"):
            report.notes.append(f"the snapshots ran with --threads {ma.get('threads')} and {mb.get('threads')}: the thread counts "
                                "recorded in run.json (command_line, threads, threads_per_rank) differ by design")
        if ma.get("only") != mb.get("only"):
            report.notes.append("the snapshots ran different subsets (--only): files of the steps not in both are listed as only before/after")
    if hashes_changed:
        report.notes.append(f"the simulation hash naming persisted seeds changed in {len(hashes_changed)} place(s), "
                            f"e.g. {sorted(hashes_changed, key=str)[0][0]} -> {sorted(hashes_changed, key=str)[0][1]}")
    for k in only_before:
        print(f"- {k} (only before)")
    for k in only_after:
        print(f"+ {k} (only after)")
    for line in report.lines:
        print(line)
    for n in report.notes:
        print(f"note: {n}")
    tol = "exact" if args.rtol == 0 and args.atol == 0 else f"rtol {args.rtol:g}, atol {args.atol:g}"
    same = not only_before and not only_after and report.files_differing == 0
    print(f"{compared} files compared ({tol}; figures by existence): "
          f"{report.files_differing} differ, {len(only_before)} only before, {len(only_after)} only after"
          f" -> {'SAME' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
