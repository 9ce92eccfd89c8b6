"""hdat from Python: a learning curve, a theory-vs-simulation check and a small phase diagram of the
`specialization` model (multi-head attention on the single-location model), in one matplotlib figure.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/specialization.py [OUT_DIR] [--quick]

Writes OUT_DIR/specialization.png (default out/python-example) and the three runs' folders beside it,
as the command line would have written them. --quick shrinks every size (for the test suite).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import hdat  # noqa: E402

quick = "--quick" in sys.argv
args = [a for a in sys.argv[1:] if a != "--quick"]
out = Path(args[0] if args else "out/python-example")
samples = 1024 if quick else 8000  # Gaussian samples of the theory's expectations
threads = 1 if quick else 0  # 0: every core

# 1. The learning curve: the unspecialized plateau, then the heads split onto the features.
curve = hdat.curve("specialization", t_max=100, mc_samples=samples, threads=threads, quiet=True)
curve.save(out / "curve")
c = curve.table  # curve.csv: t, risk, risk_se, M_h_f (head-feature overlaps), R_h_k (head-head)
print(curve.summary)

# 2. Theory against online SGD at finite D, on the same observation times.
times = np.linspace(0, 60, 13)
D, seeds = (200, 2) if quick else (1000, 8)
theory = hdat.curve("specialization", t_points=times, mc_samples=samples, threads=threads, quiet=True)
sim = hdat.simulate("specialization", t_points=times, D=D, seeds=seeds, test_size=2000, threads=threads, quiet=True)
sim.save(out / "simulate")
th, sm = theory.table, sim.table
# Each seed leaves the unstable plateau at its own random time; their mean is then no single
# trajectory, and the theory (started from the seeds' mean overlaps) leaves it later. So the two are
# compared before the first escape, as `hdat.validate` does (t_compare).
z = (sm["risk"] - th["risk"]) / np.hypot(sm["risk_se"], th["risk_se"])
before = th["t"] <= 20
print(f"D = {D}, {seeds} seeds: largest |simulation - theory| on t <= 20 = {np.max(np.abs(z[before])):.2f} standard errors "
      f"(after the seeds' escapes, up to {np.max(np.abs(z)):.1f}; `hdat.validate` runs the full check with its finite-size trend)")

# 3. A small phase diagram: the excess risk over the Bayes risk at t = 60, over eta x signal scale.
grid = {"eta": [0.5, 1.0, 2.0], "prior.scale": [0.5, 1.0, 1.5, 2.0]} if not quick else {"eta": [0.5, 2.0], "prior.scale": [0.5, 2.0]}
phase = hdat.sweep("specialization", grid=grid, observables=["final:risk", "info:bayes_risk"], out=out / "phase", t_max=60,
                   mc_samples=samples // 2, n_points=20, threads=threads, quiet=True)
p = phase.table
excess = (p["final_risk"] - p["bayes_risk"]).to_numpy().reshape(len(grid["eta"]), len(grid["prior.scale"]))
print(phase.summary)

fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
ax[0].fill_between(c["t"], c["risk"] - c["risk_se"], c["risk"] + c["risk_se"], alpha=0.3)
ax[0].plot(c["t"], c["risk"], label="population risk")
ax[0].axhline(curve.info["bayes_risk"], ls="--", color="k", label="Bayes risk")
ax[0].set(xscale="log", xlabel="t = steps / D", ylabel="risk", title="learning curve (theory)")
ax[0].legend()
ax[1].plot(th["t"], th["risk"], label="theory")
ax[1].errorbar(sm["t"], sm["risk"], yerr=sm["risk_se"], fmt="o", ms=3, label=f"online SGD, D = {D}, {seeds} seeds")
ax[1].axvline(20, ls=":", color="grey", label="compared up to here (seeds escape later)")
ax[1].set(xlabel="t", ylabel="risk", title="theory vs simulation")
ax[1].legend()
image = ax[2].imshow(excess, origin="lower", aspect="auto", cmap="viridis")
ax[2].set(xticks=range(len(grid["prior.scale"])), xticklabels=grid["prior.scale"], yticks=range(len(grid["eta"])), yticklabels=grid["eta"],
          xlabel="signal scale (prior.scale)", ylabel="learning rate eta", title="excess risk at t = 60")
fig.colorbar(image, ax=ax[2])
fig.tight_layout()
out.mkdir(parents=True, exist_ok=True)
fig.savefig(out / "specialization.png", dpi=120)
print(f"figure: {out / 'specialization.png'}")
