"""The final risk over (eta, prior.scale): theory (curve) next to simulation (reduced engine, D = 1e4).

Usage: /usr/bin/python3 docs/figures/specialization/phase_diagram.py THEORY_DIR SIM_DIR OUT.png
where the two folders are written by the `hdat sweep` commands in docs/specialization.md.
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


def grid(folder):
    table = pd.read_csv(f"{folder}/sweep.csv")
    return table.pivot(index="prior.scale", columns="eta", values="final_risk")


theory, simulation = grid(sys.argv[1]), grid(sys.argv[2])
fig, axes = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
low, high = min(theory.min().min(), simulation.min().min()), max(theory.max().max(), simulation.max().max())
panels = [(theory, "theory (order-parameter ODE)", "viridis", (low, high)),
          (simulation, "online SGD, D = 10^4, 4 seeds (reduced engine)", "viridis", (low, high)),
          (simulation - theory, "simulation - theory", "coolwarm", None)]
for ax, (data, title, cmap, limits) in zip(axes, panels):
    if limits is None:
        bound = np.nanmax(np.abs(data.values))
        limits = (-bound, bound)
    image = ax.pcolormesh(np.log10(data.columns), data.index, data.values, cmap=cmap, vmin=limits[0], vmax=limits[1],
                          shading="nearest")
    fig.colorbar(image, ax=ax, label="final risk (t = 60)" if cmap == "viridis" else "difference")
    ax.set_xlabel("log10 eta")
    ax.set_ylabel("prior.scale")
    ax.set_title(title, fontsize=9)
fig.suptitle("specialization (defaults: bayes, H = F = 2, L = 4): final risk over (eta, signal amplitude)", fontsize=10)
fig.savefig(sys.argv[3], dpi=100)
