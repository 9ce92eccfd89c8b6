"""hdat.integrate against SciPy's solve_ivp, side by side, on the same Python right-hand sides.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_integrate.py

For each system and tolerance: right-hand-side calls, wall time (best of 3), time per call, and the
error at the final time against a reference computed by both at rtol 1e-13. The Python call of f costs
the same in both; what differs is the stepper's work between calls and its error control.
"""

import time

import numpy as np
from scipy.integrate import solve_ivp

import hdat


def van_der_pol(t, y):
    return np.array([y[1], (1 - y[0] ** 2) * y[1] - y[0]])


K = 8
A = -np.eye(K) + 0.3 * np.random.default_rng(1).normal(size=(K, K)) / np.sqrt(K)


def matrix_flow(t, y):  # dQ/dt = A Q + Q A^T - Q^2 / 4 on a K x K block (64 values)
    Q = y.reshape(K, K)
    return (A @ Q + Q @ A.T - Q @ Q / 4).ravel()


SYSTEMS = {"van der Pol (2 values, t in [0, 20])": (van_der_pol, np.array([2.0, 0.0]), 20.0),
           f"matrix Riccati flow ({K}x{K}, t in [0, 10])": (matrix_flow, np.eye(K).ravel(), 10.0)}


def best_of(n, f):
    best, out = float("inf"), None
    for _ in range(n):
        start = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - start)
    return best, out


def main():
    print(f"{'system':44} {'rtol':>6} {'solver':22} {'f calls':>8} {'time ms':>9} {'us/call':>8} {'error':>9}")
    for name, (f, x0, T) in SYSTEMS.items():
        ref = hdat.integrate(f, x0, [0, T], rtol=1e-13, atol=1e-15).x[-1]
        ref2 = solve_ivp(f, (0, T), x0, method="DOP853", rtol=1e-13, atol=1e-15).y[:, -1]
        assert np.max(np.abs(ref - ref2)) < 1e-9, "the two references disagree"
        for rtol in (1e-6, 1e-10):
            atol = rtol * 1e-2
            runs = {
                "hdat dopri5": lambda: hdat.integrate(f, x0, [0, T], rtol=rtol, atol=atol),
                "hdat rkf78": lambda: hdat.integrate(f, x0, [0, T], method="rkf78", rtol=rtol, atol=atol),
                "scipy RK45": lambda: solve_ivp(f, (0, T), x0, method="RK45", rtol=rtol, atol=atol),
                "scipy DOP853": lambda: solve_ivp(f, (0, T), x0, method="DOP853", rtol=rtol, atol=atol),
            }
            for solver, run in runs.items():
                seconds, sol = best_of(3, run)
                if solver.startswith("hdat"):
                    calls, final = sol.summary.rhs_calls, sol.x[-1]
                else:
                    calls, final = sol.nfev, sol.y[:, -1]
                error = np.max(np.abs(final - ref))
                print(f"{name:44} {rtol:6.0e} {solver:22} {calls:8d} {1e3 * seconds:9.2f} {1e6 * seconds / calls:8.2f} {error:9.2e}")


if __name__ == "__main__":
    main()
