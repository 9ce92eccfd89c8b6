"""Result objects: what a command computed, and the output folder the command line would write."""

import io
import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path

import pandas as pd


def read_table(text, **options):
    """A CSV of hdat as a DataFrame, as pandas reads the command line's file (numbers round-trip exactly)."""
    return pd.read_csv(io.StringIO(text), float_precision="round_trip", **options)


def new_folder():
    """A private output folder, removed when its result is garbage-collected."""
    return Path(tempfile.mkdtemp(prefix="hdat-"))


def copy_folder(source, target):
    """Every file of `source` (recursively) into `target`, as if the run had written them there: where
    a text file names the source folder (run.json's persisted seeds, a gnuplot script's data files) it
    names the target. Returns target as a Path."""
    source, target = Path(source), Path(target)
    if source.resolve() == target.resolve():
        return target
    old, new = str(source).encode(), str(target).encode()
    for path in sorted(source.rglob("*")):
        if path.is_file():
            dest = target / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            content = path.read_bytes()
            if path.suffix != ".png" and old in content:
                dest.write_bytes(content.replace(old, new))
                shutil.copystat(path, dest)
            else:
                shutil.copy2(path, dest)
    return target


def _describe_table(name, frame):
    return f"{name} ({len(frame)} rows x {len(frame.columns)} columns)"


class Result:
    """One run of a model command.

    tables     {file name: DataFrame}, one per CSV the command line writes, same columns
    info       the run.json record as a dict (resolved configuration under "config", provenance,
               solver statistics, the command's own info)
    exit_code  as the command line's: 0 success, 1 validation disagrees (validate), 3 numerical
               failure, 5 validation undecided (too few seeds: validate.json says what to raise),
               130 interrupted
    summary    the command's summary, as the command line prints it
    files      {file name: path} of the other files the command wrote (JSON, text)
    dir        the folder that holds every file of the run (a private temporary one unless out= was given)
    save(dir)  the same files into dir: what `hdat COMMAND MODEL --out dir` writes
    """

    def __init__(self, raw, folder, owned, equivalent):
        self.model = raw["model"]
        self.command = raw["command"]
        self.exit_code = int(raw["exit_code"])
        self.summary = raw["summary"]
        self.report = raw["report"]
        self.info = raw["record"]
        # A sweep's point hashes are hex digits: read as text, never as a number.
        self.tables = {name: read_table(text, dtype={"hash": str} if name == "sweep.csv" else None) for name, text in raw["tables"].items()}
        self.files = {name: Path(folder) / name for name in raw["files"]}
        self.dir = Path(folder)
        self.equivalent = equivalent  # the command line that computes the same
        if owned:
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(folder), True)

    @property
    def config(self):
        """The resolved parameters (nested, as run.json's "config")."""
        return self.info.get("config", {})

    @property
    def table(self):
        """The main table: curve.csv for curve, sim.csv for simulate, validate.csv for validate, else the first."""
        preferred = {"curve": "curve.csv", "simulate": "sim.csv", "validate": "validate.csv", "sweep": "sweep.csv"}.get(self.command)
        if preferred in self.tables:
            return self.tables[preferred]
        return next(iter(self.tables.values())) if self.tables else None

    def __getitem__(self, name):
        """A table by file name, with or without ".csv" (result["curve"] is result.tables["curve.csv"])."""
        if name in self.tables:
            return self.tables[name]
        if name + ".csv" in self.tables:
            return self.tables[name + ".csv"]
        raise KeyError(f"{name!r}: the tables are {', '.join(self.tables) or 'none'}")

    def read(self, name):
        """One of the other files: parsed for .json, text otherwise."""
        path = self.files.get(name, self.dir / name)
        text = Path(path).read_text()
        return json.loads(text) if str(name).endswith(".json") else text

    def save(self, dir):
        """Write the run's files into `dir` (created if needed): exactly the files the command line writes."""
        target = Path(dir)
        target.mkdir(parents=True, exist_ok=True)
        return copy_folder(self.dir, target)

    def plot(self, **options):
        """The figures of `hdat plot` for this run (see hdat.plot)."""
        from ._plot import plot

        return plot(self, **options)

    def _headline(self):
        return f"hdat {self.command} {self.model}: exit code {self.exit_code}"

    def __repr__(self):
        tables = ", ".join(_describe_table(n, t) for n, t in self.tables.items()) or "no tables"
        lines = [f"<{self._headline()}; {tables}>"]
        if self.summary.strip():
            lines.append(self.summary.rstrip())
        return "\n".join(lines)

    def __str__(self):
        return self.summary.rstrip() or self._headline()


class SweepResult(Result):
    """One sweep: tables {"sweep.csv": one row per grid point}; info is run.json, definition sweep.json;
    dir holds points/<hash>.json (each point's record), so the same call with out=dir resumes."""

    def __init__(self, raw, folder, owned, equivalent):
        folder = Path(folder)
        record = json.loads((folder / "run.json").read_text())
        table = (folder / "sweep.csv").read_text()
        super().__init__(
            {"model": record.get("model", ""), "command": "sweep", "exit_code": raw["exit_code"], "summary": raw["report"],
             "report": raw["report"], "record": record, "tables": {"sweep.csv": table}, "files": ["sweep.json"]},
            folder, owned, equivalent)
        self.definition = json.loads((folder / "sweep.json").read_text())

    def point(self, index):
        """The stored record of grid point `index` (row order of sweep.csv): status, parameters, info and
        the command's tables as DataFrames; None when it was not computed."""
        row = self.table.iloc[index]
        path = self.dir / "points" / f"{row['hash']}.json"
        if not path.exists():
            return None
        record = json.loads(path.read_text())
        record["tables"] = {name: read_table(text) for name, text in record.get("tables", {}).items()}
        return record


def owned_folder(out):
    """(folder, owned): the user's folder (created by the run, as on the command line), or a private
    temporary one."""
    if out is None:
        return new_folder(), True
    if os.fspath(out) in ("", b""):  # Path("") would be the current folder
        from ._errors import InputError

        raise InputError("parameter 'out': is empty: name the output folder (e.g. results/run1), or leave out out= for a private one", "out")
    return Path(os.fspath(out)), False
