"""The linear teacher-student as your own hdat model, in Python with NumPy (docs/python.md, "Your own model").

A student W (K x N) learns a teacher W* (K x N) by online SGD on y = W* x / sqrt(N) + noise; the overlaps
R = W W*^T / N and Q = W W^T / N follow a closed ODE whose drift has an eta-linear and an eta^2 term.
hdat's C++ harness integrates it, runs the finite system at several N, and judges their agreement:

    python3 examples/python/teacher_student.py [OUT]      # curve, validate (trajectories and drift) into OUT
"""

import sys

import numpy as np

import hdat

T_DEFAULT = [[1.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.0]]


class TeacherStudent(hdat.Model):
    """Linear student W learns a linear teacher W* (W* W*^T / N = T) by online SGD with step eta / sqrt(N)."""

    name = "py-teacher-student"
    summary = "linear teacher-student, online SGD: overlaps R, Q against the closed ODE (a model declared in Python)"
    parameters = {
        "T": hdat.RealMatrix(T_DEFAULT, "teacher overlap W* W*^T / N (K x K, symmetric positive definite)"),
        "init_std": hdat.Real(0.5, "the student's initial weights are i.i.d. N(0, init_std^2)", range=(0, None)),
        "noise": hdat.Real(0.0, "label noise sigma: y = W* x / sqrt(N) + sigma xi", range=(0, None)),
        "eta": hdat.Real(0.5, "learning rate (E decays as exp(-eta (2 - eta) t))", range=(0, 2), open="both"),
        "N": hdat.Integer(1000, "input dimension (simulate's size)", range=(2, 10**7)),
        "R0": hdat.RealMatrix(None, "initial R of the theory (K x K; with Q0)"),
        "Q0": hdat.RealMatrix(None, "initial Q of the theory (K x K symmetric; with R0)"),
    }
    standard = dict(t_max=10.0, n_points=20, seeds=8, dims=[250, 500, 1000], size_key="N", drift_times=[0.0, 2.0],
                    drift_samples=4000)
    terms = ("eta", "eta2")
    start_keys = ("R0", "Q0")
    theory_only_keys = ("R0", "Q0")

    def configure(self, c):
        T = c.T
        if T.ndim != 2 or T.shape[0] != T.shape[1] or not np.allclose(T, T.T, rtol=0, atol=1e-12):
            raise hdat.InputError("parameter 'T': must be a symmetric K x K matrix", "T")
        if np.linalg.eigvalsh(T).min() <= 0:
            raise hdat.InputError("parameter 'T': must be positive definite (it is W* W*^T / N)", "T")
        c.K = T.shape[0]
        if (c.R0 is None) != (c.Q0 is None):
            raise hdat.InputError("parameter 'R0': give R0 and Q0 together, or neither", "R0")
        for key in ("R0", "Q0"):
            if c[key] is not None and c[key].shape != T.shape:
                raise hdat.InputError(f"parameter '{key}': must be K x K = {T.shape} like T", key)
        if c.Q0 is not None and not np.allclose(c.Q0, c.Q0.T, rtol=0, atol=1e-12):
            raise hdat.InputError("parameter 'Q0': must be symmetric", "Q0")

    def blocks(self, c):
        return {"R": (c.K, c.K), "Q": (c.K, c.K, "symmetric")}

    def drift(self, c, b, t):
        R, Q, T, eta = b["R"], b["Q"], c.T, c.eta
        E = T - R - R.T + Q  # the error's second moment E[(nu - lambda)(nu - lambda)^T]
        return {"eta": {"R": eta * (T - R), "Q": eta * (R + R.T - 2 * Q)},
                "eta2": {"Q": eta**2 * (E + c.noise**2 * np.eye(c.K))}}

    def observe(self, c, b, t):
        R, Q = b["R"], b["Q"]
        return {"eps": 0.5 * np.trace(c.T - R - R.T + Q)}

    def initial_state(self, c):
        if c.R0 is not None:
            return {"R": c.R0, "Q": c.Q0}
        return self.replica_initial_state(c, 0)

    def replica_initial_state(self, c, replica):
        return self.System(c, c.N, replica).state()

    def describe(self, c):
        return f"K={c.K}, eta={c.eta:g}, noise={c.noise:g}"

    class System:
        """Online SGD at dimension N: one step per fresh sample, time t = steps / N."""

        def __init__(self, c, size, replica):
            self.c, self.N = c, int(size)
            self.sqrt_n = np.sqrt(self.N)
            # Independent streams per (seed, replica, N): teacher, initial student, training data, drift samples.
            teacher, init, data, drift = np.random.SeedSequence([c.seed, replica, self.N]).spawn(4)
            z = np.random.default_rng(teacher).standard_normal((self.N, c.K))
            rows, _ = np.linalg.qr(z)  # N x K, orthonormal columns: W* W*^T / N = L L^T = T exactly
            self.W_star = np.linalg.cholesky(c.T) @ rows.T * self.sqrt_n
            self.W = c.init_std * np.random.default_rng(init).standard_normal((c.K, self.N))
            self.data, self.drift_data = np.random.default_rng(data), np.random.default_rng(drift)
            self.steps = 0

        def time(self):
            return self.steps / self.N

        def _error(self, rng):
            """A fresh sample: x, the error e = y - lambda and the student's preactivation lambda."""
            x = rng.standard_normal(self.N)
            nu, lam = self.W_star @ x / self.sqrt_n, self.W @ x / self.sqrt_n
            y = nu + self.c.noise * rng.standard_normal(self.c.K) if self.c.noise > 0 else nu
            return x, y - lam, nu, lam

        def advance_to(self, t):
            while self.steps < round(t * self.N):
                x, e, _, _ = self._error(self.data)
                self.W += (self.c.eta / self.sqrt_n) * np.outer(e, x)
                self.steps += 1

        def state(self):
            return {"R": self.W @ self.W_star.T / self.N, "Q": self.W @ self.W.T / self.N}

        def observe(self):
            s = self.state()
            return {"eps": 0.5 * np.trace(self.c.T - s["R"] - s["R"].T + s["Q"])}

        def increment(self):
            # One step's change of R and Q divided by dt = 1/N, not applied: with dW = (eta/sqrt N) e x^T,
            # N dR = dW W*^T = eta e nu^T, N dQ = dW W^T + W dW^T + dW dW^T = eta (e lam^T + lam e^T) + eta^2 |x|^2/N e e^T.
            x, e, nu, lam = self._error(self.drift_data)
            eta = self.c.eta
            linear = eta * np.outer(e, lam)
            return {"eta": {"R": eta * np.outer(e, nu), "Q": linear + linear.T},
                    "eta2": {"Q": eta**2 * (x @ x / self.N) * np.outer(e, e)}}

        def record(self):
            return {"steps": self.steps}


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else None
    curve = hdat.curve(TeacherStudent, out=out and f"{out}/curve", replace=True)
    print(curve.summary)
    for mode in ("trajectory", "drift"):
        v = hdat.validate(TeacherStudent, mode=mode, out=out and f"{out}/validate_{mode}", replace=True)
        print(v.summary)
