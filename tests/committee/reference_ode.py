#!/usr/bin/python3
"""An independent implementation of the committee-machine ODE (Saad & Solla 1995) for the tests.

Written from the published formulas, not from hdat's code: the integrals in Saad and Solla's own
form (I3 with Lambda3; I4 with Lambda0, Lambda1, Lambda2, Lambda4), every index tuple evaluated
with NumPy broadcasting, the spec's sums as einsum contractions, and classical fixed-step RK4.

    /usr/bin/python3 reference_ode.py INPUT.json OUTPUT.json

INPUT: {"K", "M", "activation": "erf"|"linear", "eta", "eta_v", "train_v", "noise", "wd",
        "vstar": [M], "v0": [K], "Q0": [[K]], "R0": [[M] x K], "T0": [[M]], "times": [...], "dt"}
OUTPUT: {"times": [...], "Q": [K x K per time], "R": [...], "v": [...], "eg": [...]}
"""
import json
import sys

import numpy as np


def covariance(Q, R, T):
    return np.block([[Q, R], [R.T, T]])


def integrals(C, K, activation):
    """I2[a,b], J2[a,b], I3[a,b,c] over all fields, I4[i,k,c,d] for students i, k."""
    L = C.shape[0]
    if activation == "linear":
        I2 = C.copy()
        J2 = np.ones((L, L))
        I3 = np.broadcast_to(C[None, :, :], (L, L, L))
        I4 = np.broadcast_to(C[None, None, :, :], (K, K, L, L))
        return I2, J2, I3, I4
    d = np.diag(C)
    one = 1.0 + d
    I2 = 2 / np.pi * np.arcsin(C / np.sqrt(np.outer(one, one)))
    J2 = 2 / np.pi / np.sqrt(np.outer(one, one) - C**2)
    # I3(a,b,c) = 2/pi / sqrt(Lambda3) * (C_bc (1 + C_aa) - C_ab C_ac) / (1 + C_aa),
    # Lambda3 = (1 + C_aa)(1 + C_cc) - C_ac^2
    a, b, c = np.ix_(range(L), range(L), range(L))
    lam3 = one[a] * one[c] - C[a, c] ** 2
    I3 = 2 / np.pi / np.sqrt(lam3) * (C[b, c] * one[a] - C[a, b] * C[a, c]) / one[a]
    # I4(a,b,c,d) = 4/pi^2 / sqrt(Lambda4) * arcsin(Lambda0 / sqrt(Lambda1 Lambda2))
    i, k, c, e = np.ix_(range(K), range(K), range(L), range(L))
    lam4 = one[i] * one[k] - C[i, k] ** 2
    lam0 = (lam4 * C[c, e] - C[k, e] * C[k, c] * one[i] - C[i, e] * C[i, c] * one[k]
            + C[i, k] * C[i, c] * C[k, e] + C[i, k] * C[i, e] * C[k, c])
    lam1 = lam4 * one[c] - C[k, c] ** 2 * one[i] - C[i, c] ** 2 * one[k] + 2 * C[i, k] * C[i, c] * C[k, c]
    lam2 = lam4 * one[e] - C[k, e] ** 2 * one[i] - C[i, e] ** 2 * one[k] + 2 * C[i, k] * C[i, e] * C[k, e]
    I4 = 4 / np.pi**2 / np.sqrt(lam4) * np.arcsin(lam0 / np.sqrt(lam1 * lam2))
    return I2, J2, I3, I4


def rhs(state, p):
    K, M = p["K"], p["M"]
    Q, R, T, v = state
    C = covariance(Q, R, T)
    I2, J2, I3, I4 = integrals(C, K, p["activation"])
    s = np.concatenate([-v, p["vstar"]])
    eta, wd, sig2 = p["eta"], p["wd"], p["noise"] ** 2
    # sum_c s_c I3(i, b, c) for students i and every field b
    A = np.einsum("ibc,c->ib", I3[:K], s)
    dR = eta * v[:, None] * A[:, K:] - wd * R
    lin = eta * v[:, None] * A[:, :K]
    noise_term = np.einsum("ikcd,c,d->ik", I4, s, s) + sig2 * J2[:K, :K]
    dQ = lin + lin.T + eta**2 * np.outer(v, v) * noise_term - 2 * wd * Q
    dv = p["eta_v"] * I2[:K] @ s if p["train_v"] else np.zeros(K)
    return dQ, dR, np.zeros_like(T), dv


def eg(state, p):
    Q, R, T, v = state
    C = covariance(Q, R, T)
    I2 = integrals(C, p["K"], p["activation"])[0]
    s = np.concatenate([-v, p["vstar"]])
    return 0.5 * s @ I2 @ s


def rk4(state, p, dt):
    def add(x, k, h):
        return tuple(xi + h * ki for xi, ki in zip(x, k))

    k1 = rhs(state, p)
    k2 = rhs(add(state, k1, dt / 2), p)
    k3 = rhs(add(state, k2, dt / 2), p)
    k4 = rhs(add(state, k3, dt), p)
    return tuple(x + dt / 6 * (a + 2 * b + 2 * c + d) for x, a, b, c, d in zip(state, k1, k2, k3, k4))


def main():
    with open(sys.argv[1]) as f:
        p = json.load(f)
    p["vstar"] = np.array(p["vstar"], dtype=float)
    state = (np.array(p["Q0"], dtype=float), np.array(p["R0"], dtype=float), np.array(p["T0"], dtype=float),
             np.array(p["v0"], dtype=float))
    dt, t = p["dt"], 0.0
    out = {"times": [], "Q": [], "R": [], "v": [], "eg": []}
    for target in p["times"]:
        while t < target - 1e-12:
            h = min(dt, target - t)
            state = rk4(state, p, h)
            t += h
        out["times"].append(t)
        out["Q"].append(state[0].tolist())
        out["R"].append(state[1].tolist())
        out["v"].append(state[3].tolist())
        out["eg"].append(float(eg(state, p)))
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
