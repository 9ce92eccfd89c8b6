"""hdat.integrate: a Python right-hand side through hdat's engine, against closed forms, SciPy's
solve_ivp (where installed), and the engine's own bookkeeping."""

import math
import threading

import numpy as np
import pytest

import hdat

METHODS = ["dopri5", "rkf78", "cash_karp54", "rosenbrock4"]


@pytest.mark.parametrize("method", METHODS)
def test_harmonic_oscillator_matches_the_closed_form(method):
    # x'' = -w^2 x: x = cos(w t), v = -w sin(w t); the global error scales with the tolerance.
    w = 2.0
    t = np.linspace(0, 10, 41)
    errors = []
    for rtol in (1e-6, 1e-9):
        sol = hdat.integrate(lambda tt, y: np.array([y[1], -w * w * y[0]]), [1.0, 0.0], t, method=method, rtol=rtol, atol=rtol * 1e-2)
        assert sol.status == "completed" and sol.ok
        exact = np.column_stack([np.cos(w * t), -w * np.sin(w * t)])
        errors.append(np.max(np.abs(sol.x - exact)))
        assert np.array_equal(sol.t, t)
    # Within 100x the tolerance over 3 periods, and 100x tighter tolerance gives a much smaller error.
    assert errors[0] < 100 * 1e-6
    assert errors[1] < 100 * 1e-9
    assert errors[1] < errors[0] / 10


def test_counts_are_the_engines_own():
    # rhs_calls counts every evaluation of f: it equals the number of Python calls exactly.
    calls = []

    def f(t, x):
        calls.append(t)
        return -x

    sol = hdat.integrate(f, [1.0, 2.0], [0, 1, 2, 5], rtol=1e-10, atol=1e-12)
    s = sol.summary
    assert s.rhs_calls == len(calls)
    assert s.accepted_steps > 0 and s.steps == s.accepted_steps + s.rejected_steps
    assert s.method == "dopri5" and s.rtol == 1e-10 and s.atol == 1e-12
    assert s.t_start == 0 and s.t_reached == 5 and s.observations == 4
    assert s.wall_seconds >= s.rhs_seconds >= 0
    np.testing.assert_allclose(sol.x, np.exp(-sol.t)[:, None] * [1.0, 2.0], rtol=1e-8)
    d = s.to_dict()
    assert d["status"] == "completed" and d["rhs_calls"] == s.rhs_calls
    assert "rhs calls" in s.report() and "completed" in s.brief()


def test_log_time_spans_many_decades():
    # x' = -x / (1 + t) gives x = 1 / (1 + t); in log time the steps do not grow with t.
    t = np.concatenate([[0], np.logspace(-2, 12, 15)])
    # atol far below the smallest state: the error controller is relative all the way down.
    sol = hdat.integrate(lambda tt, x: -x / (1 + tt), [1.0], t, log_time=True, rtol=1e-10, atol=1e-25)
    assert sol.ok
    np.testing.assert_allclose(sol.x[:, 0], 1 / (1 + t), rtol=1e-7)
    assert sol.summary.accepted_steps < 2000 and sol.summary.log_time


def test_stiff_linear_system_with_rosenbrock():
    # x' = A x with eigenvalues -1 and -2000: x(t) = V exp(L t) V^-1 x0.
    A = np.array([[-1.0, 0.0], [2e3 - 1.0, -2e3]])
    x0 = np.array([1.0, 0.0])
    t = np.linspace(0, 1, 5)
    sol = hdat.integrate(lambda tt, x: A @ x, x0, t, method="rosenbrock4", rtol=1e-8, atol=1e-10)
    L, V = np.linalg.eig(A)
    exact = np.array([(V @ np.diag(np.exp(L * tt)) @ np.linalg.solve(V, x0)).real for tt in t])
    np.testing.assert_allclose(sol.x, exact, rtol=1e-5, atol=1e-8)
    assert sol.summary.jacobian_calls > 0
    # Why the stiff stepper is offered: at a loose tolerance the explicit one is held by stability
    # (steps ~ 1/2000), the implicit one only by accuracy.
    loose = [hdat.integrate(lambda tt, x: A @ x, x0, t, method=m, rtol=1e-6, atol=1e-8).summary for m in ("rosenbrock4", "dopri5")]
    assert loose[1].accepted_steps > 10 * loose[0].accepted_steps


def test_named_blocks_come_back_as_named_arrays():
    # dQ/dt = A Q (K x K), dR/dt = -R (K x M), dv/dt = 1: Q(t) = expm(A t) Q0 with A diagonalisable.
    K, M = 3, 2
    rng = np.random.default_rng(4)
    A = rng.normal(size=(K, K)) * 0.3
    Q0 = rng.normal(size=(K, K))
    R0 = rng.normal(size=(K, M))

    def f(t, s):
        assert s["Q"].shape == (K, K) and s["R"].shape == (K, M) and s["v"].shape == (K,)
        return {"Q": A @ s["Q"], "R": -s["R"], "v": np.ones(K)}

    t = np.linspace(0, 1.5, 4)
    sol = hdat.integrate(f, {"Q": Q0, "R": R0, "v": np.zeros(K)}, t, blocks={"Q": (K, K), "R": (K, M), "v": (K,)}, rtol=1e-11, atol=1e-13)
    assert sol["Q"].shape == (4, K, K) and sol["R"].shape == (4, K, M) and sol["v"].shape == (4, K)
    L, V = np.linalg.eig(A)
    for i, tt in enumerate(t):
        expm = (V @ np.diag(np.exp(L * tt)) @ np.linalg.inv(V)).real
        np.testing.assert_allclose(sol["Q"][i], expm @ Q0, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(sol["R"][i], math.exp(-tt) * R0, rtol=1e-9)
        np.testing.assert_allclose(sol["v"][i], tt, rtol=1e-10, atol=1e-12)
    # The flat state is hdat::StateLayout's: blocks in order, each column-major (Q_i_j at i + K j).
    np.testing.assert_array_equal(sol.x[0, :K * K], Q0.reshape(-1, order="F"))
    assert set(sol.final) == {"Q", "R", "v"}


def test_nonfinite_state_is_named_by_its_block():
    # Q_1_0 blows up in finite time (x' = x^2 from 1 reaches infinity at t = 1).
    def f(t, s):
        d = np.zeros((2, 2))
        d[1, 0] = s["Q"][1, 0] ** 2
        return {"Q": d}

    sol = hdat.integrate(f, {"Q": np.array([[0.0, 0.0], [1.0, 0.0]])}, [0, 0.5, 2.0], blocks={"Q": (2, 2)}, divergence=1e8, check=False)
    assert not sol.ok and sol.status in ("diverged", "nonfinite", "step_underflow")
    assert "Q_1_0" in sol.message or sol.status == "step_underflow"
    assert len(sol.t) == 2  # t = 0 and 0.5 were reached and kept
    np.testing.assert_allclose(sol["Q"][1, 1, 0], 1 / (1 - 0.5), rtol=1e-6)


def test_events_stop_the_run_where_g_changes_sign():
    # x' = -1 from 1: g = x - 0.25 crosses zero at t = 0.75; the state is linear, so the linear
    # estimate of the crossing is exact.
    def g(t, x):
        return x[0] - 0.25

    sol = hdat.integrate(lambda t, x: np.array([-1.0]), [1.0], np.linspace(0, 2, 201), events=g, max_step=0.1)
    assert sol.status == "stopped_by_event"
    assert len(sol.events) == 1
    e = sol.events[0]
    assert e["name"] == "g" and 0.75 <= e["t"] <= 0.85 + 1e-12
    assert e["t_crossing"] == pytest.approx(0.75, abs=1e-12)
    assert sol.t[-1] <= e["t"] + 1e-12 and sol.t[-1] >= 0.75 - 1e-12


def test_a_non_terminal_event_with_a_direction_only_records():
    def rising(t, x):  # sin t crosses zero upwards at 2 pi only (not at pi)
        return x[0]

    rising.terminal = False
    rising.direction = +1
    sol = hdat.integrate(lambda t, x: np.array([x[1], -x[0]]), [0.0, 1.0], np.linspace(0, 7, 8), events=[rising], max_step=0.05, rtol=1e-10)
    assert sol.status == "completed"
    assert [round(e["t_crossing"], 2) for e in sol.events] == [round(2 * math.pi, 2)]


def test_exceptions_inside_f_propagate_unchanged():
    class Custom(Exception):
        pass

    def f(t, x):
        if t > 0.5:
            raise Custom("stop here")
        return -x

    with pytest.raises(Custom, match="stop here"):
        hdat.integrate(f, [1.0], [0, 1])
    with pytest.raises(ValueError, match="returned 3 values for a state of 2"):
        hdat.integrate(lambda t, x: np.zeros(3), [1.0, 2.0], [0, 1])

    def bad_event(t, x):
        if t > 0:
            raise ZeroDivisionError("in the event")
        return 1.0

    with pytest.raises(ZeroDivisionError, match="in the event"):
        hdat.integrate(lambda t, x: -x, [1.0], [0, 1], events=bad_event)
    assert hdat.integrate(lambda t, x: -x, [1.0], [0, 1]).ok  # nothing left over for the next call


def _blow_up(t, x):
    return x * x  # x' = x^2 from 1: x = 1 / (1 - t), infinite at t = 1


# (what fails, the call's options, the status): every way a run can stop short of t[-1] for a numerical reason.
FAILURES = [
    ("diverged", dict(f=_blow_up, divergence=1e6), "diverged"),
    ("non-finite", dict(f=lambda t, x: np.array([math.nan if t > 0.3 else -x[0]])), "nonfinite"),
    ("max_steps", dict(f=lambda t, x: -x, max_steps=3, max_step=0.01), "max_steps"),
]


@pytest.mark.parametrize("what, keys, status", FAILURES, ids=[c[0] for c in FAILURES])
def test_a_numerical_failure_raises_with_the_partial_solution(what, keys, status):
    t = [0.0, 0.25, 0.5, 2.0]
    f = keys.pop("f")
    with pytest.raises(hdat.NumericalError) as info:
        hdat.integrate(f, [1.0], t, **keys)
    e = info.value
    assert isinstance(e, RuntimeError)
    sol = e.result
    assert isinstance(sol, hdat.Solution) and sol.status == status and not sol.ok
    assert status in str(e) and sol.message in str(e) and "check=False" in str(e)
    # The part before the failure is the same as a run that is told to return it.
    returned = hdat.integrate(f, [1.0], t, check=False, **keys)
    assert returned.status == status and len(returned.t) == len(sol.t) >= 1
    np.testing.assert_array_equal(returned.x, sol.x)
    assert len(sol.t) < len(t)  # it did stop short


def test_the_partial_solution_holds_the_states_before_the_failure():
    with pytest.raises(hdat.NumericalError) as info:
        hdat.integrate(_blow_up, [1.0], [0.0, 0.5, 0.9, 2.0], divergence=1e6)
    sol = info.value.result
    np.testing.assert_array_equal(sol.t, [0.0, 0.5, 0.9])
    np.testing.assert_allclose(sol.x[:, 0], 1 / (1 - sol.t), rtol=1e-6)


def test_completed_and_event_stopped_runs_do_not_raise():
    assert hdat.integrate(lambda t, x: -x, [1.0], [0, 1]).status == "completed"

    def below_half(t, x):
        return x[0] - 0.5

    sol = hdat.integrate(lambda t, x: -x, [1.0], [0, 5], events=below_half)
    assert sol.status == "stopped_by_event"


@pytest.mark.parametrize("keys, key", [
    ({"check": "yes"}, "check"),
    ({"method": "euler"}, "method"), ({"rtol": 0}, "rtol"), ({"atol": -1}, "atol"), ({"max_steps": 0}, "max_steps"),
    ({"blocks": {"Q": (2, 0)}}, "blocks"), ({"blocks": {"Q": (2, 2)}}, "x0"), ({"t": [1, 0]}, "t"), ({"t": [0, float("nan")]}, "t"),
])
def test_bad_options_name_the_option(keys, key):
    args = {"f": lambda t, x: -x, "x0": [1.0, 2.0], "t": [0, 1]}
    args.update(keys)
    with pytest.raises(hdat.InputError) as info:
        hdat.integrate(args.pop("f"), args.pop("x0"), args.pop("t"), **args)
    assert info.value.key == key and f"'{key}'" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_other_python_threads_run_while_it_integrates():
    # The engine runs without the GIL between calls of f: a Python thread keeps counting.
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    worker = threading.Thread(target=count)
    worker.start()
    try:
        sol = hdat.integrate(lambda t, x: -x, np.ones(4), np.linspace(0, 50, 5), rtol=1e-12, atol=1e-14, method="rkf78")
    finally:
        stop.set()
        worker.join()
    assert sol.ok and ticks[0] > 1000


def test_matches_scipy_solve_ivp():
    scipy_integrate = pytest.importorskip("scipy.integrate", reason="SciPy is not installed (apt install python3-scipy): "
                                          "the comparison with solve_ivp is skipped; the closed-form tests above still ran")

    # Van der Pol at mu = 1 (no closed form): both at tight tolerances agree far below them.
    def vdp(t, y):
        return np.array([y[1], (1 - y[0] ** 2) * y[1] - y[0]])

    t = np.linspace(0, 10, 21)
    ours = hdat.integrate(vdp, [2.0, 0.0], t, rtol=1e-11, atol=1e-13)
    ref = scipy_integrate.solve_ivp(vdp, (0, 10), [2.0, 0.0], t_eval=t, method="DOP853", rtol=1e-12, atol=1e-14)
    assert ref.success
    np.testing.assert_allclose(ours.x, ref.y.T, rtol=1e-7, atol=1e-9)


def test_events_are_located_between_steps_whatever_the_grid():
    # x = exp(-t): x - 1/2 crosses zero at t = ln 2; the state is curved, so a linear estimate between
    # steps would be off by about the square of the step.
    def half(t, x):
        return x[0] - 0.5

    half.terminal = False
    for grid in ([0, 5], np.linspace(0, 5, 501)):
        sol = hdat.integrate(lambda t, x: -x, [1.0], grid, events=half, rtol=1e-12, atol=1e-14)
        assert sol.status == "completed" and len(sol.events) == 1
        e = sol.events[0]
        assert e["t"] == pytest.approx(math.log(2), abs=1e-10) and e["direction"] == -1
        assert e["x"][0] == pytest.approx(0.5, abs=1e-10)
