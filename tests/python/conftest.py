"""Shared helpers of the Python suite: the `hdat` program next to the module, and comparisons of
output folders (what the command line writes vs what Result.save writes)."""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("HDAT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
PROGRAM = Path(os.environ.get("HDAT_PROGRAM", ROOT / "build" / "hdat"))

# Fields that legitimately differ between two runs of the same command: clocks (any key with
# "seconds" or "per_second" in its path, wall times, the date) and the command line. Every difference between two
# command-line runs must be one of these (checked), and the Python run must equal the command line's
# everywhere else. In text (summaries), durations and rates ("0.061 s", "(12.3 points/s)") are masked,
# and each run's own folder name reads DIR.
VOLATILE = re.compile(r"seconds|per_second|(^|[._])(date|command_line|[a-z_]*wall)$")
CLOCK_TEXT = re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?\s*(s|ms|µs|us|[a-z]+/s)\b")


def mask(text, folder=None):
    if folder:
        text = text.replace(str(folder), "DIR")
    return CLOCK_TEXT.sub("<clock>", text)


def cli(*args, cwd=ROOT, check=None, timeout=300):
    """Run the hdat program; returns CompletedProcess (text)."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    r = subprocess.run([str(PROGRAM), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if check is not None:
        assert r.returncode == check, f"hdat {' '.join(map(shlex.quote, map(str, args)))} -> {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def set_args(keys):
    """--set key=value arguments for a dict of keys (values as JSON, strings bare)."""
    out = []
    for k, v in keys.items():
        out += ["--set", f"{k}={v if isinstance(v, str) else json.dumps(v)}"]
    return out


def files_of(folder):
    folder = Path(folder)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _leaves(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, node


def _key_of(path):
    return re.sub(r"\[\d+\]", "", path)


def _json_differences(a, b):
    la, lb = dict(_leaves(a)), dict(_leaves(b))
    keys = set(la) | set(lb)
    return {k for k in keys if la.get(k, "<absent>") != lb.get(k, "<absent>") and not (_is_nan(la.get(k)) and _is_nan(lb.get(k)))}


def _load_json(path, folder):
    """A JSON file with its folder's name as DIR and the clock figures of its texts masked."""
    def walk(node):
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return mask(node, folder) if isinstance(node, str) else node
    return walk(json.loads(Path(path).read_text()))


def _is_nan(x):
    return isinstance(x, float) and x != x


def _csv_rows(path, folder):
    lines = Path(path).read_text().replace(str(folder), "DIR").splitlines()
    return lines[0].split(","), [line.split(",") for line in lines[1:]]


def _csv_differences(a, b, folder_a, folder_b):
    """Column names whose cells differ (None when the shapes or headers differ)."""
    ha, ra = _csv_rows(a, folder_a)
    hb, rb = _csv_rows(b, folder_b)
    if ha != hb or len(ra) != len(rb):
        return None
    return {ha[j] for x, y in zip(ra, rb) for j, (u, v) in enumerate(zip(x, y)) if u != v}


def compare_folders(python_dir, cli_a, cli_b):
    """The Python run's folder equals the command line's, file by file. Returns the excluded fields
    (those that also differ between the two command-line runs cli_a and cli_b, all of them clocks or
    the command line: asserted)."""
    fa, fb, fp = files_of(cli_a), files_of(cli_b), files_of(python_dir)
    assert fp == fa, f"files differ: python {fp} vs command line {fa}"
    assert fb == fa
    excluded = set()
    for name in fa:
        a, b, p = Path(cli_a) / name, Path(cli_b) / name, Path(python_dir) / name
        # Byte for byte where the file holds no clock; JSON and CSV are compared by field, clocks
        # aside, even where the two command-line runs agree (two runs can take the same 32 µs).
        structured = name.endswith((".json", ".csv"))
        if not structured and a.read_bytes() == b.read_bytes() and str(cli_a).encode() not in a.read_bytes():
            assert p.read_bytes() == a.read_bytes(), f"{name}: the Python run's file differs from the command line's"
            continue
        if name.endswith(".json"):
            ja, jb, jp = _load_json(a, cli_a), _load_json(b, cli_b), _load_json(p, python_dir)
            volatile = _json_differences(ja, jb)
            bad = {k for k in volatile if not VOLATILE.search(_key_of(k))}
            assert not bad, f"{name}: two command-line runs differ in {sorted(bad)}, which are not clocks"
            diff = {k for k in _json_differences(ja, jp) if k not in volatile and not VOLATILE.search(_key_of(k))}
            hint = " (the hdat program and the module come from different builds: build both)" if "git_revision" in diff else ""
            assert not diff, f"{name}: the Python run differs from the command line's in {sorted(diff)}{hint}"
            excluded |= {f"{name}:{_key_of(k)}" for k in volatile | (_json_differences(ja, jp) - diff)}
        elif name.endswith(".csv"):
            volatile = _csv_differences(a, b, cli_a, cli_b)
            assert volatile is not None, f"{name}: two command-line runs give different shapes"
            bad = {c for c in volatile if not VOLATILE.search(c)}
            assert not bad, f"{name}: two command-line runs differ in columns {sorted(bad)}, which are not clocks"
            diff = _csv_differences(a, p, cli_a, python_dir)
            assert diff is not None and diff <= volatile | {c for c in diff if VOLATILE.search(c)}, f"{name}: columns {diff} differ"
            excluded |= {f"{name}:{c}" for c in diff | volatile}
        elif name.endswith((".png", ".svg")):
            excluded.add(name)  # a figure that differs between two runs of the same command: present in both is all we ask
        else:
            ta, tb, tp = mask(a.read_text(), cli_a), mask(b.read_text(), cli_b), mask(p.read_text(), python_dir)
            assert ta == tb, f"{name}: two command-line runs differ beyond clocks and their folder's name"
            assert tp == ta, f"{name}: the Python run's file differs from the command line's"
            excluded.add(f"{name} (clock figures and folder name)")
    return excluded


@pytest.fixture(scope="session")
def program():
    assert PROGRAM.exists(), f"the hdat program is not built at {PROGRAM}"
    return PROGRAM
