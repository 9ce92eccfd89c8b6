#!/usr/bin/env python3
"""One online-SGD step of the specialization model in PyTorch (autograd), the alternative a user would
write, timed per step on one thread. The same model and step as hdat's full engine
(validation/specialization/simulator.cpp, activation=softmax, aggregation=mean): spikes K* and value v*
orthonormal with norm sqrt(D); tokens x_l ~ N(0, I_D) (the signal token adds K* theta / sqrt(D)), label
y = x_eps . v* / sqrt(D) + noise xi; chi = X k / sqrt(D), per-head softmax over tokens, w = mean over
heads, prediction yhat = w . z; loss (y - yhat)^2 / 2; k <- k - eta grad.
Not used by the build or the tests; needs /usr/bin/python3 with python3-torch.

Usage: torch_step.py [--D 10000] [--L 32] [--H 4] [--steps 200] [--dtype float64|float32]
Prints one JSON line: ms_per_step (median of 5 rounds), threads, dtype, torch version.
"""
import argparse
import json
import math
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--D", type=int, default=10000)
    ap.add_argument("--L", type=int, default=32)
    ap.add_argument("--H", type=int, default=4)
    ap.add_argument("--F", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--dtype", default="float64")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dtype = getattr(torch, a.dtype)
    D, L, H, F = a.D, a.L, a.H, a.F
    root_D = math.sqrt(D)
    q, _ = torch.linalg.qr(torch.randn(D, F + 1, dtype=dtype))
    k_star, v_star = q[:, :F] * root_D, q[:, F] * root_D
    mean = torch.tensor([1.0, 1.0][:F] + [1.0] * max(0, F - 2), dtype=dtype)
    std = torch.tensor([1.5, 0.6][:F] + [1.0] * max(0, F - 2), dtype=dtype)
    keys = (0.3 * torch.randn(D, H, dtype=dtype)).requires_grad_()

    def step():
        eps = int(torch.randint(L, (1,)))
        theta = mean + std * torch.randn(F, dtype=dtype)
        x = torch.randn(L, D, dtype=dtype)
        x[eps] += k_star @ theta / root_D
        z = x @ v_star / root_D
        y = z[eps] + 0.1 * torch.randn((), dtype=dtype)
        chi = x @ keys / root_D
        w = torch.softmax(chi, dim=0).mean(dim=1)
        loss = 0.5 * (y - w @ z) ** 2
        loss.backward()
        with torch.no_grad():
            keys.sub_(a.eta * keys.grad)
            keys.grad = None

    for _ in range(10):
        step()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        rounds.append((time.perf_counter() - t0) / a.steps * 1e3)
    print(json.dumps({"implementation": "pytorch", "D": D, "L": L, "H": H, "dtype": a.dtype,
                      "ms_per_step": statistics.median(rounds), "rounds_ms": rounds,
                      "threads": torch.get_num_threads(), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
