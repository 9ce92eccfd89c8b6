"""The cost of the Python boundary of a model declared in Python (docs/python.md, "Your own model").

At N = 1000 and K = 3 (the linear teacher-student of examples/python/teacher_student.py), each
measured through hdat's C++ harness and directly in Python on the same NumPy code:
  - one drift call: the harness's integrator calling drift() (run.json: solver rhs_seconds / rhs_calls)
    against drift() called in a Python loop;
  - one simulator step of the drift check: one increment() through `validate mode=drift` (the
    difference of two runs with different sample counts, so that fixed costs cancel) against
    increment() called in a Python loop;
  - one training step: `simulate` (one seed, threads=1) per step against advance_to() in Python.

    PYTHONPATH=build/python python3 bench/python_model/boundary.py
"""

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))

import numpy as np  # noqa: E402

import hdat  # noqa: E402
from hdat import _model  # noqa: E402
from teacher_student import TeacherStudent  # noqa: E402

N = 1000


def config():
    """The model's config at its defaults with N = 1000, as a command builds it."""
    name = hdat.register(TeacherStudent)
    defaults = hdat.parameters(name)["default"].to_dict()
    defaults["N"] = N
    return _model._bind(TeacherStudent(), _model._registered[name][1], defaults)


def per_call(f, repeat):
    f()
    start = time.perf_counter()
    for _ in range(repeat):
        f()
    return (time.perf_counter() - start) / repeat


def run_json(result):
    return json.loads((Path(result.dir) / "run.json").read_text())


def main():
    c = config()
    model = TeacherStudent()
    blocks = model.initial_state(c)

    # Drift: through the integrator (tight tolerances: many calls) against a Python loop.
    R0, Q0 = blocks["R"], blocks["Q"]
    r = hdat.curve(TeacherStudent, R0=R0, Q0=Q0, N=N, t_max=200.0, n_points=50, rtol=1e-12, atol=1e-14, quiet=True)
    solver = run_json(r)["solver"]
    drift_harness = solver["rhs_seconds"] / solver["rhs_calls"]
    drift_direct = per_call(lambda: model.drift(c, blocks, 0.0), 20000)

    # One increment (one SGD step's sample, not applied) in the drift check, against a Python loop.
    def drift_check(samples):
        start = time.perf_counter()
        hdat.validate(TeacherStudent, mode="drift", dims=[N], drift_times=[0.0], drift_samples=samples, quiet=True, threads=1)
        return time.perf_counter() - start

    few, many = 2000, 22000
    increment_harness = min((drift_check(many) - drift_check(few)) / (many - few) for _ in range(2))
    system = model.System(c, N, 0)
    increment_direct = per_call(system.increment, 20000)

    # One training step: simulate (one seed, t = steps / N) against advance_to in Python.
    t_max = 20.0
    start = time.perf_counter()
    hdat.simulate(TeacherStudent, N=N, seeds=1, t_max=t_max, n_points=5, threads=1, quiet=True)
    step_harness = (time.perf_counter() - start) / (t_max * N)
    fresh = model.System(c, N, 0)
    start = time.perf_counter()
    fresh.advance_to(t_max)
    step_direct = (time.perf_counter() - start) / (t_max * N)

    print(f"N = {N}, K = {c.K}, numpy {np.__version__}, hdat {hdat.__version__}")
    print(f"{'':28}{'harness':>12}{'direct':>12}{'ratio':>8}")
    for what, h, d in (("drift call", drift_harness, drift_direct), ("increment (drift check)", increment_harness, increment_direct),
                       ("training step (simulate)", step_harness, step_direct)):
        print(f"{what:28}{h * 1e6:>10.2f}us{d * 1e6:>10.2f}us{h / d:>8.2f}")


if __name__ == "__main__":
    main()
