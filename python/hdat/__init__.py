"""hdat: the theory of how attention layers learn, checked against simulation — from Python.

The same C++ as the `hdat` program, with the same keys, files and exit codes (docs/python.md):

    import hdat
    hdat.models()                                   # the models and their commands
    hdat.parameters("specialization")               # every key: type, default, range, meaning, condition
    r = hdat.curve("specialization", t_max=50)      # as `hdat curve specialization --set t_max=50`
    r.table                                         # curve.csv as a DataFrame
    r.save("out/curve")                             # the files the command line writes

Keys are the command line's: simple keys as keyword arguments, dotted or nested keys through
`params` ({"prior.kind": "discrete"} or {"prior": {"kind": "discrete"}}); keyword arguments win over
`params`, as --set wins over --config. Bad input raises InputError (a ValueError) with the command
line's message; a numerical failure raises NumericalError carrying what was computed before it;
Ctrl-C raises Interrupted (a KeyboardInterrupt) carrying the finished part.
"""

import functools
import os
import sys
from collections import namedtuple

# An installed package (pip install .) carries the bundled model (data/models/stories260K) beside it:
# hdat's data folder unless HDAT_DATA_DIR names another. From a build tree the source's data/ is used.
_PACKAGED_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
if os.path.isdir(os.path.join(_PACKAGED_DATA, "models")):
    os.environ.setdefault("HDAT_DATA_DIR", _PACKAGED_DATA)

import pandas as pd

from . import _core
from ._errors import InputError, Interrupted, NumericalError
from ._integrate import Solution, integrate
from ._model import Boolean, Choice, Config, Integer, IntegerList, Model, Real, RealList, RealMatrix, Text, model_name, register
from ._keys import call_text, equivalent, split
from ._plot import Figures, plot
from ._results import Result, SweepResult, new_folder, owned_folder
from ._core import Summary

__version__ = _core.version
__all__ = ["models", "parameters", "describe", "run", "curve", "simulate", "validate", "analyze", "optimize", "sweep", "geometry", "plot",
           "integrate", "Result", "SweepResult", "Solution", "Summary", "Figures", "InputError", "NumericalError", "Interrupted",
           "Model", "Config", "Real", "Integer", "RealList", "IntegerList", "RealMatrix", "Boolean", "Text", "Choice", "register"]

ModelInfo = namedtuple("ModelInfo", "name summary description commands small")


def models():
    """Every model: name, one-line summary, description and commands (as `hdat list`), and `small`: per
    command, settings at which it runs in seconds (what the test suite uses)."""
    return [ModelInfo(**m) for m in _core.models()]


def describe(model=None):
    """The text `hdat list` (no model) or `hdat list MODEL` prints."""
    return _core.models_text() if model is None else _core.parameters_text(model_name(model))


def parameters(model):
    """A model's keys, one row each (index: key), as `hdat list MODEL` shows them: type, default, range
    (as the command line says it; low/high/low_open/high_open in numbers), meaning, and `applies_when`
    (the condition under which the key applies; "" for always), plus the allowed choices."""
    rows = _core.parameters(model_name(model))
    frame = pd.DataFrame(rows, columns=["key", "type", "default", "range", "doc", "condition", "choices", "low", "high", "low_open", "high_open"])
    return frame.rename(columns={"doc": "meaning", "condition": "applies_when"}).set_index("key")


@functools.lru_cache(maxsize=None)
def _declared(model):
    return frozenset(p["key"] for p in _core.parameters(model))


def _forward_stderr():
    """Whether C++'s descriptor 2 must be copied to sys.stderr (a notebook shows sys.stderr only)."""
    try:
        return sys.stderr is not None and sys.stderr.fileno() != 2
    except (AttributeError, OSError, ValueError):
        return True


def _check_threads(threads, name="threads"):
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise InputError(f"parameter '{name}': must be >= 0 (0: all cores)", name)


def _last_line(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _finish(result, interrupted, what):
    """The command line's exit code as Python sees it: 130 -> Interrupted, 3 -> NumericalError."""
    if interrupted or (result is not None and result.exit_code == 130):
        where = f"; the finished part is in .result ({result.dir})" if result is not None else ""
        raise Interrupted(f"{what}: interrupted{where}", result)
    if result.exit_code == 3:
        raise NumericalError(f"{what}: {_last_line(result.summary) or 'numerical failure'} (exit code 3)", result)
    return result


def _execute(compute, make_result, out, what):
    """Run `compute(folder)` (the C++ call), wrap what it returns, and clean up a private folder that
    received nothing because of an error."""
    folder, owned = owned_folder(out)
    try:
        raw = compute(folder)
    except BaseException:
        if owned:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
        raise
    if raw is None:  # interrupted before the command returned
        raise Interrupted(f"{what}: interrupted before anything was finished", None)
    return _finish(make_result(raw, folder, owned), raw.get("interrupted", False), what)


def run(model, command, params=None, *, out=None, threads=0, quiet=False, replace=False, **keys):
    """Run any command of a model (curve, simulate, validate, analyze, or the model's own) as
    `hdat COMMAND MODEL [--set key=value]... --out DIR` does; returns a Result.

    params   dict of keys (nested or dotted), as a --config file
    **keys   simple keys, as --set key=value (they win over params)
    out      the output folder (resumable work is kept there); default: a private temporary folder
             (Result.save copies it). A folder holding another command's or configuration's outputs
             is refused (InputError) unless replace=True, which removes hdat's files there first
             (--replace); the same call with the same keys resumes.
    threads  worker threads, 0 = all cores; quiet: no progress lines
    """
    _check_threads(threads)
    if not isinstance(replace, bool):
        raise InputError("parameter 'replace': must be True or False", "replace")
    model = model_name(model)  # a Model class: registered once under its name
    config, sets = split(params, keys, _declared(model))
    words = [command, model]
    text = call_text(command if command in ("curve", "simulate", "validate", "analyze") else "run",
                     [model] if command in ("curve", "simulate", "validate", "analyze") else [model, command], params, keys)

    def compute(folder):
        return _core.run(model, command, config, sets, str(folder), threads, bool(quiet), _forward_stderr(), text, replace)

    def make(raw, folder, owned):
        # A private folder is removed with its result: the equivalent command names the user's own.
        target = ["--out", "DIR"] if owned else ["--out", str(folder)] + (["--replace"] if replace else [])
        return Result(raw, folder, owned, equivalent(words + target, config, sets, _declared(model)))

    return _execute(compute, make, out, f"hdat {command} {model}")


def curve(model, params=None, *, out=None, threads=0, quiet=False, replace=False, **keys):
    """The theory's curve (`hdat curve MODEL`): Result with tables["curve.csv"]."""
    return run(model, "curve", params, out=out, threads=threads, quiet=quiet, replace=replace, **keys)


def simulate(model, params=None, *, out=None, threads=0, quiet=False, replace=False, **keys):
    """The finite-dimensional simulation (`hdat simulate MODEL`): Result with tables["sim.csv"]."""
    return run(model, "simulate", params, out=out, threads=threads, quiet=quiet, replace=replace, **keys)


def validate(model, params=None, *, out=None, threads=0, quiet=False, replace=False, **keys):
    """Theory against simulation (`hdat validate MODEL`): Result whose exit_code is 0 when they agree,
    1 when they do not, 5 when the data cannot decide (docs/validation.md)."""
    return run(model, "validate", params, out=out, threads=threads, quiet=quiet, replace=replace, **keys)


def analyze(model, params=None, *, out=None, threads=0, quiet=False, replace=False, **keys):
    """The model's analysis (`hdat analyze MODEL`, e.g. the linear stability of specialization)."""
    return run(model, "analyze", params, out=out, threads=threads, quiet=quiet, replace=replace, **keys)


def optimize(model, control, params=None, *, out=None, threads=0, quiet=False, **options):
    """The optimal protocol (`hdat optimize MODEL --control ...`): see hdat._optimize.optimize for the
    options (intervals, shape, bounds, budget, objective, target, t_final, algorithm, confirm ...);
    model keys go in params or as keyword arguments, as for curve."""
    _check_threads(threads)
    from ._optimize import optimize as _optimize

    names = ("intervals", "shape", "bounds", "budget", "objective", "target", "t_final", "algorithm", "max_evaluations", "baselines",
             "confirm", "confirm_seeds", "confirm_theory", "restart")
    opts = {k: options.pop(k) for k in list(options) if k in names}
    return _optimize(model, control, params, out=out, threads=threads, quiet=quiet, declared=_declared(model), execute=_execute,
                     **opts, **options)


def _grid_text(key, values):
    """One --grid argument: a string as written (start:stop:count[:log] or [a,b,...]), else a list."""
    import json

    from ._keys import to_value

    if isinstance(values, str):
        return f"{key}={values}"
    values = to_value(values)
    if not isinstance(values, list):
        values = [values]
    return f"{key}={json.dumps(values, separators=(',', ':'))}"


def sweep(model, grid, params=None, *, mode="theory", observables=None, out=None, threads=0, point_threads=1, retry_failed=False,
          quiet=False, **keys):
    """A model command over a grid (`hdat sweep MODEL --grid ...`): a SweepResult with tables["sweep.csv"].

    grid         {key: values}: a list / NumPy array of values, or the command line's text
                 "start:stop:count[:log]"; several keys give the cartesian product (first key slowest)
    mode         "theory" (the curve command), "simulate", or another command of the model
    observables  the sweep.csv columns (the command line's --observable forms); default: the model's
    out          the sweep folder; finished points are kept in out/points and the same call resumes
    threads      points computed at once (0: all cores); point_threads: threads of each point
    """
    _check_threads(threads)
    if isinstance(point_threads, bool) or not isinstance(point_threads, int) or point_threads < 1:
        raise InputError("parameter 'point_threads': must be >= 1", "point_threads")
    if not isinstance(grid, dict) or not grid:
        raise InputError("parameter 'grid': give {key: values} with at least one key", "grid")
    if isinstance(observables, str):
        observables = [observables]
    model = model_name(model)
    config, sets = split(params, keys, _declared(model))
    grid_args = [_grid_text(k, v) for k, v in grid.items()]
    observables = list(observables or [])

    def compute(folder):
        return _core.sweep(model, config, sets, grid_args, observables, mode, str(folder), threads, point_threads, bool(retry_failed), False,
                           bool(quiet), _forward_stderr())

    def make(raw, folder, owned):
        words = ["sweep", model] + sum((["--grid", _quote(g)] for g in grid_args), [])
        words += ["--mode", mode] + sum((["--observable", _quote(o)] for o in observables), []) + ["--out", "DIR" if owned else str(folder)]
        return SweepResult(raw, folder, owned, equivalent(words, config, sets, _declared(model)))

    return _execute(compute, make, out, f"hdat sweep {model}")


def _quote(text):
    import shlex

    return shlex.quote(text)


def geometry(model_file=None, *, maps=None, params=None, out=None, threads=0, quiet=False, **keys):
    """Token-selection geometry of attention maps (`hdat geometry`): of a llama2.c checkpoint
    (model_file; default the bundled stories260K, data/models/stories260K/, sha256-checked), or of
    maps: a file in the JSON format of docs/geometry.md, or the same content as Python data
    ({"maps": [...]} or the list of maps; arrays may be NumPy)."""
    _check_threads(threads)
    if model_file is not None and maps is not None:
        raise InputError("parameter 'maps': analyses maps instead of a checkpoint; give maps or model_file, not both", "maps")
    config, sets = split(params, keys, _declared("geometry"))
    maps_file, scratch = "", None
    if maps is not None:
        if isinstance(maps, (str, os.PathLike)):
            maps_file = os.fspath(maps)
        else:
            import json

            from ._keys import to_value

            content = to_value(maps)
            if isinstance(content, list):
                content = {"maps": content}
            scratch = new_folder()
            maps_file = str(scratch / "maps.json")
            with open(maps_file, "w") as f:
                json.dump(content, f)
    source = os.fspath(model_file) if model_file is not None else ""
    text = call_text("geometry", [source] if source else [], params, keys)

    def compute(folder):
        try:
            return _core.geometry(source, maps_file, config, sets, str(folder), threads, bool(quiet), _forward_stderr(), text)
        finally:
            if scratch is not None:
                import shutil

                shutil.rmtree(scratch, ignore_errors=True)

    def make(raw, folder, owned):
        if raw.get("notes"):
            sys.stderr.write(raw["notes"])
        words = ["geometry"] + (["--model-file", _quote(source)] if source else []) + (["--maps", _quote(maps_file)] if maps_file else [])
        return Result(raw, folder, owned, equivalent(words + ["--out", "DIR" if owned else str(folder)], config, sets, _declared("geometry")))

    return _execute(compute, make, out, "hdat geometry")
