"""hdat.optimize: the optimal protocol of a model's controllable parameters (`hdat optimize MODEL`)."""

import math

from . import _core
from ._errors import InputError
from ._keys import split
from ._results import Result


def _pairs(name, mapping, form):
    """{control: value} as the command line's CONTROL=... texts."""
    if mapping is None:
        return []
    if not isinstance(mapping, dict):
        raise InputError(f"parameter '{name}': give {{control: {form}}}", name)
    out = []
    for control, value in mapping.items():
        if name == "bounds":
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise InputError(f"parameter 'bounds': {control}: give (lo, hi)", "bounds")
            out.append(f"{control}={float(value[0])!r}:{float(value[1])!r}")
        else:
            out.append(f"{control}={float(value)!r}")
    return out


def optimize(model, control, params=None, *, intervals=20, shape="piecewise_constant", bounds=None, budget=None, objective="final",
             target=None, t_final=None, algorithm="slsqp", max_evaluations=400, baselines=True, confirm=0, confirm_seeds=16,
             confirm_theory=None, restart=False, out=None, threads=0, quiet=False, declared=None, execute=None, **keys):
    """The schedule of `control` (a name or a list: committee eta, dropout_keep, test_scale;
    specialization eta) minimising the risk through the model's theory, beside the best constant and
    the usual schedules, as `hdat optimize MODEL --control ... --out DIR` (docs/optimize.md).

    bounds     {control: (lo, hi)};  budget {control: mean}
    objective  "final" | "average" | "time_to_target" (then target=)
    confirm    a size N (D): also train the finite system under the optimum and the best constant
    confirm_theory  {key: value}: settings of the theory that predicts the confirmation (keys that
               change no finite run, e.g. {"mc_samples": 20000})
    Returns a Result: tables["baselines.csv"], ["schedules.csv"], ["risk_curves.csv"]; files["schedule.json"]
    (pass it back as schedule= to curve, simulate or validate)."""
    controls = [control] if isinstance(control, str) else list(control or [])
    config, sets = split(params, keys, declared)
    nan = math.nan

    def compute(folder):
        raw = _core.optimize(model, config, sets, controls, int(intervals), shape, _pairs("bounds", bounds, "(lo, hi)"),
                             _pairs("budget", budget, "mean"), objective, nan if target is None else float(target),
                             nan if t_final is None else float(t_final), algorithm, int(max_evaluations), bool(baselines), float(confirm),
                             int(confirm_seeds), confirm_theory, bool(restart), str(folder), threads, bool(quiet), True,
                             f"hdat.optimize({model!r}, {controls!r})")
        return raw or None

    def make(raw, folder, owned):
        return Result(raw, folder, owned, None)

    return execute(compute, make, out, f"hdat optimize {model}")
