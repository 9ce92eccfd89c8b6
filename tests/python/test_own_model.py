"""Your own model from Python (issue 33 item 5): the linear teacher-student of
examples/python/teacher_student.py, declared with hdat.Model in NumPy, through the C++ harness."""

import json
import os
import shutil
import signal
import sys

import numpy as np
import pandas as pd
import pytest

import hdat
from conftest import ROOT

sys.path.insert(0, str(ROOT / "examples" / "python"))
from teacher_student import TeacherStudent  # noqa: E402

# Small settings on which validate takes seconds (N and the seeds chosen so that the verdict decides).
SMALL = dict(N=200, dims=[100, 200, 400], seeds=16, t_max=3.0, n_points=8, quiet=True)
DRIFT = dict(N=200, dims=[400], drift_samples=4000, drift_times=[0.0, 1.0], mode="drift", quiet=True)


def closed_form(T, R0, Q0, eta, t):
    """sigma = 0: R(t) = T - (T - R0) e^{-eta t}, E(t) = E0 e^{-eta (2 - eta) t}, Q = E - T + R + R^T."""
    R = T - (T - R0) * np.exp(-eta * t)
    E = (T - R0 - R0.T + Q0) * np.exp(-eta * (2 - eta) * t)
    return R, E - T + R + R.T


def test_curve_is_the_closed_form():
    T = np.array([[1.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.0]])
    R0 = np.array([[0.1, 0.0, -0.05], [0.02, 0.2, 0.0], [0.0, 0.1, 0.05]])
    Q0 = np.array([[0.3, 0.05, 0.0], [0.05, 0.25, 0.02], [0.0, 0.02, 0.2]])
    eta = 0.8
    r = hdat.curve(TeacherStudent, R0=R0, Q0=Q0, eta=eta, t_max=6.0, n_points=12, quiet=True)
    assert r.exit_code == 0
    table = r.tables["curve.csv"]
    assert len(table) == 12 + 1 and table["t"].iloc[0] == 0 and {"t", "eps", "R_0_1", "R_1_0", "Q_0_2"} <= set(table.columns) and "Q_2_0" not in table.columns
    worst = 0.0
    for _, row in table.iterrows():
        R, Q = closed_form(T, R0, Q0, eta, row["t"])
        for i in range(3):
            for j in range(3):
                worst = max(worst, abs(row[f"R_{i}_{j}"] - R[i, j]))
                if i <= j:
                    worst = max(worst, abs(row[f"Q_{i}_{j}"] - Q[i, j]))
        assert row["eps"] == pytest.approx(0.5 * np.trace(T - R - R.T + Q), abs=1e-6)
    assert worst < 1e-6  # integrated at rtol 1e-8, atol 1e-10


def test_validate_agrees_and_a_broken_term_disagrees(tmp_path):
    good = hdat.validate(TeacherStudent, out=tmp_path / "good", **SMALL)
    assert good.exit_code == 0, good.summary
    record = json.loads((tmp_path / "good" / "run.json").read_text())
    assert record["model"] == "py-teacher-student" and record["validation"]["verdict"] == "agree"
    assert len(list((tmp_path / "good" / "seeds").glob("*.csv"))) == 16 * 3  # every seed persisted (resume)
    broken = hdat.validate(TeacherStudent, break_term="eta2", out=tmp_path / "broken", **SMALL)
    assert broken.exit_code == 1, broken.summary
    for name in ("good", "broken"):
        assert hdat.plot(tmp_path / name)


def test_the_drift_check_agrees_term_by_term_and_fails_with_a_term_broken(tmp_path):
    good = hdat.validate(TeacherStudent, out=tmp_path / "good", **DRIFT)
    assert good.exit_code == 0, good.summary
    rows = good.tables["drift.csv"]
    assert set(rows["term"]) == {"eta", "eta2"}
    for term in ("eta", "eta2"):
        broken = hdat.validate(TeacherStudent, break_term=term, out=tmp_path / term, **DRIFT)
        assert broken.exit_code == 1, broken.summary
    assert hdat.plot(tmp_path / "good")


def test_simulate_is_the_same_with_one_thread_or_two_and_plots(tmp_path):
    keys = dict(N=100, seeds=4, t_max=2.0, n_points=5, quiet=True)
    one = hdat.simulate(TeacherStudent, threads=1, out=tmp_path / "one", **keys)
    two = hdat.simulate(TeacherStudent, threads=2, out=tmp_path / "two", **keys)
    assert (tmp_path / "one" / "sim.csv").read_bytes() == (tmp_path / "two" / "sim.csv").read_bytes()
    assert len(one.tables["sim.csv"]) == 5 + 1  # n_points and t = 0
    assert hdat.plot(tmp_path / "one")
    curve = hdat.curve(TeacherStudent, out=tmp_path / "curve", t_max=2.0, n_points=5, N=100, seeds=4, quiet=True)
    # curve starts from the seeds' mean of the replicas' initial overlaps: simulate's mean start
    assert curve.exit_code == 0 and hdat.plot(tmp_path / "curve")


def test_an_interrupted_simulate_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    keys = dict(N=100, seeds=4, t_max=2.0, n_points=5, threads=1, quiet=True)
    hdat.simulate(TeacherStudent, out=tmp_path / "whole", **keys)
    advance = TeacherStudent.System.advance_to
    calls, fired = [], []

    def advance_then_ctrl_c(self, t):
        calls.append(t)
        if len(calls) == 2 * 6 + 3 and not fired:  # in the third seed (threads=1: seeds in order; 6 times each)
            fired.append(True)
            os.kill(os.getpid(), signal.SIGINT)
            import time

            time.sleep(0.3)  # the calling thread sees Ctrl-C and raises the interrupt flag
        advance(self, t)

    monkeypatch.setattr(TeacherStudent.System, "advance_to", advance_then_ctrl_c)
    with pytest.raises(hdat.Interrupted):
        hdat.simulate(TeacherStudent, out=tmp_path / "resumed", **keys)
    assert len(list((tmp_path / "resumed" / "seeds").glob("*.csv"))) == 2
    calls.clear()
    resumed = hdat.simulate(TeacherStudent, out=tmp_path / "resumed", **keys)
    assert resumed.exit_code == 0 and len(calls) == 2 * 6  # only the two unfinished seeds ran
    assert (tmp_path / "resumed" / "sim.csv").read_bytes() == (tmp_path / "whole" / "sim.csv").read_bytes()


class DriftFails(TeacherStudent):
    name = "py-teacher-student-drift-fails"

    def drift(self, c, b, t):
        if t > 0.5:
            raise ZeroDivisionError("the model's own bug")
        return super().drift(c, b, t)


class SystemFails(TeacherStudent):
    name = "py-teacher-student-system-fails"

    class System(TeacherStudent.System):
        def advance_to(self, t):
            if t > 1.0:
                raise KeyError("a bug in the simulator")
            super().advance_to(t)


def test_a_python_exception_in_the_model_surfaces_as_itself_and_nothing_is_written(tmp_path):
    with pytest.raises(ZeroDivisionError, match="the model's own bug"):
        hdat.curve(DriftFails, out=tmp_path / "curve", t_max=2.0, quiet=True)
    assert not (tmp_path / "curve" / "run.json").exists()
    for threads in (1, 2):
        with pytest.raises(KeyError, match="a bug in the simulator"):
            hdat.simulate(SystemFails, out=tmp_path / f"sim{threads}", N=100, seeds=4, t_max=2.0, threads=threads, quiet=True)
        assert not (tmp_path / f"sim{threads}" / "run.json").exists()
    with pytest.raises(KeyError, match="a bug in the simulator"):
        hdat.validate(SystemFails, N=100, dims=[100, 200], seeds=4, t_max=2.0, quiet=True)
    # The next call runs normally (the interrupt flag and the kept exception are cleared).
    assert hdat.curve(TeacherStudent, t_max=1.0, n_points=3, N=100, seeds=2, quiet=True).exit_code == 0


@pytest.mark.parametrize("keys, key", [(dict(eta=2.5), "eta"), (dict(T=[[1.0, 2.0], [2.0, 1.0]]), "T"), (dict(R0=np.eye(3)), "R0"),
                                       (dict(init_std=-1.0), "init_std"), (dict(seeds=0), "seeds"), (dict(nonsense=1), "nonsense")])
def test_bad_input_is_an_input_error_naming_the_key_before_anything_is_written(tmp_path, keys, key):
    for command in (hdat.curve, hdat.simulate, hdat.validate):
        with pytest.raises(hdat.InputError) as info:
            command(TeacherStudent, out=tmp_path / "out", quiet=True, **keys)
        assert info.value.key == key and f"'{key}'" in str(info.value)
        assert not (tmp_path / "out").exists()


def test_a_model_name_belongs_to_one_class():
    class Other(TeacherStudent):
        pass  # the same name, another class

    with pytest.raises(hdat.InputError, match="registered already by another class"):
        hdat.curve(Other, quiet=True)
    with pytest.raises(hdat.InputError, match="exists already"):
        hdat.curve(type("Shadow", (TeacherStudent,), {"name": "committee"}), quiet=True)
    assert "py-teacher-student" in [m.name for m in hdat.models()]
    p = hdat.parameters(TeacherStudent)
    assert p.loc["eta", "default"] == 0.5 and "learning rate" in p.loc["eta", "meaning"]
    assert list(p.loc["break_term", "choices"]) == ["none", "eta", "eta2"]


def test_a_sweep_runs_the_python_model_and_its_exception_surfaces(tmp_path):
    s = hdat.sweep(TeacherStudent, {"eta": [0.3, 1.2]}, observables=["final:eps"], t_max=3.0, quiet=True, out=tmp_path / "sweep")
    for eta, eps in zip(s.tables["sweep.csv"]["eta"], s.tables["sweep.csv"]["final_eps"]):
        assert eps == hdat.curve(TeacherStudent, eta=eta, t_max=3.0, quiet=True).tables["curve.csv"]["eps"].iloc[-1]
    with pytest.raises(ZeroDivisionError, match="the model's own bug"):
        hdat.sweep(DriftFails, {"eta": [0.3, 1.2]}, observables=["final:eps"], t_max=3.0, quiet=True, threads=2)


class TeacherStudentWithEvent(TeacherStudent):
    """The teacher-student with an event: R_00 reaching half of T_00 (its plateau's end, for the test)."""

    name = "py-teacher-student-event"
    escape_event = "learned_half"

    def events(self, c):
        return {"learned_half": (lambda b, t: b["R"][0, 0] - 0.5 * c.T[0, 0], +1), "never": lambda b, t: 1.0}


def test_events_of_a_python_model_are_located_by_the_theory_and_on_the_finite_runs(tmp_path):
    T = np.array([[1.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.0]])
    R0 = np.diag([0.1, 0.2, 0.05])
    Q0 = np.diag([0.3, 0.25, 0.2])
    eta = 0.8
    # sigma = 0: R_00(t) = T_00 - (T_00 - R0_00) e^{-eta t} crosses T_00 / 2 at ln(0.9 / 0.5) / eta.
    r = hdat.curve(TeacherStudentWithEvent, R0=R0, Q0=Q0, eta=eta, t_max=3.0, n_points=4, quiet=True, out=tmp_path / "curve")
    events = json.loads((tmp_path / "curve" / "run.json").read_text())["events"]
    assert events["learned_half"] == pytest.approx(np.log(0.9 / 0.5) / eta, rel=1e-7)  # between 4 coarse observations
    assert events["never"] is None
    assert "learned_half" in r.summary
    # Each finite run's crossing, between its observations: from random weights (R0 ~ 0) at ln 2 / eta.
    s = hdat.simulate(TeacherStudentWithEvent, eta=eta, N=400, seeds=8, t_points=list(np.linspace(0, 2, 41)), quiet=True, out=tmp_path / "sim")
    escapes = json.loads((tmp_path / "sim" / "run.json").read_text())["simulation"]["escape_times"]
    assert len(escapes) == 8 and all(e is not None for e in escapes)
    assert np.mean(escapes) == pytest.approx(np.log(2) / eta, abs=0.1)
    assert s.exit_code == 0


class MisnamedEscape(TeacherStudent):
    name = "py-teacher-student-misnamed-escape"
    escape_event = "learnd"

    def events(self, c):
        return {"learned": lambda b, t: b["R"][0, 0] - 0.5}


def test_an_escape_event_that_is_not_among_the_events_is_refused():
    with pytest.raises(Exception, match="escape_event 'learnd' is not among"):
        hdat.curve(MisnamedEscape, quiet=True)


class Ramped(TeacherStudent):
    """The teacher-student with a learning rate that grows in time, eta(t) = eta (1 + t): its drift
    depends on t, so the drift check must compare the terms at the run's own time."""

    name = "py-teacher-student-ramped"

    def drift(self, c, b, t):
        R, Q, T, eta = b["R"], b["Q"], c.T, c.eta * (1 + t)
        E = T - R - R.T + Q
        return {"eta": {"R": eta * (T - R), "Q": eta * (R + R.T - 2 * Q)},
                "eta2": {"Q": eta**2 * (E + c.noise**2 * np.eye(c.K))}}

    class System(TeacherStudent.System):
        def _eta(self):
            return self.c.eta * (1 + self.time())

        def advance_to(self, t):
            while self.steps < round(t * self.N):
                x, e, _, _ = self._error(self.data)
                self.W += (self._eta() / self.sqrt_n) * np.outer(e, x)
                self.steps += 1

        def increment(self):
            x, e, nu, lam = self._error(self.drift_data)
            eta = self._eta()
            linear = eta * np.outer(e, lam)
            return {"eta": {"R": eta * np.outer(e, nu), "Q": linear + linear.T},
                    "eta2": {"Q": eta**2 * (x @ x / self.N) * np.outer(e, e)}}


def test_the_drift_check_of_a_time_dependent_drift_compares_at_the_run_time(tmp_path):
    # At t = 1.5 the rate is 2.5 eta: the terms at t = 0 would be off by 2.5x (eta) and 6.25x (eta2).
    r = hdat.validate(Ramped, out=tmp_path / "ramped", **dict(DRIFT, drift_times=[0.0, 1.5]))
    assert r.exit_code == 0, r.summary
    rows = r.tables["drift.csv"]
    assert sorted(set(rows["t"])) == [0.0, 1.5]


def test_a_failing_model_stops_its_own_call_only(tmp_path):
    # A simulate in another thread, running while a model's drift fails here, finishes as if alone:
    # the failure stops the call it was raised in (before, it raised the process's interrupt flag and
    # the other call came back interrupted).
    import threading
    keys = dict(N=1000, seeds=6, t_max=3.0, n_points=4, quiet=True)
    beside = {}

    def run_beside():
        try:
            beside["r"] = hdat.simulate(TeacherStudent, threads=1, out=tmp_path / "beside", **keys)
        except BaseException as e:  # noqa: B036 - reported below, in the test's thread
            beside["error"] = e

    worker = threading.Thread(target=run_beside)
    worker.start()
    while worker.is_alive() and not (tmp_path / "beside" / "seeds").exists():
        threading.Event().wait(0.01)
    with pytest.raises(ZeroDivisionError, match="the model's own bug"):
        hdat.curve(DriftFails, t_max=2.0, quiet=True)
    assert worker.is_alive(), "the call beside finished before the failure: make it longer"
    worker.join()
    assert "error" not in beside, f"the call beside was stopped: {beside.get('error')!r}"
    assert beside["r"].exit_code == 0
    alone = hdat.simulate(TeacherStudent, threads=1, out=tmp_path / "alone", **keys)
    assert (tmp_path / "beside" / "sim.csv").read_bytes() == (tmp_path / "alone" / "sim.csv").read_bytes()
