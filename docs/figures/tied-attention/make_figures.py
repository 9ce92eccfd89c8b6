#!/usr/bin/env python3
"""Figures of docs/tied-attention.md, "AMP, state evolution and ERM at T = 2" (issue 18).

    python3 make_figures.py                 # draw amp_se_erm.{png,svg}, bayes_gap.{png,svg} from the CSVs here
    python3 make_figures.py --table         # ... and print the doc's markdown tables from the same CSVs
    python3 make_figures.py --collect RUNS  # rebuild the CSVs from the hdat output folders under RUNS
                                            # (folder names as in the doc's commands), then draw

CSVs (all from hdat runs, see the doc for the commands):
  amp_se_erm.csv      series (se | erm_theory | amp | erm_sim), alpha, d, lambda, mse, mse_se, seeds,
                      converged_fraction.  se: curve's bayes_mse; erm_theory: curve's factorised ERM MSE at
                      the lambda of lowest theoretical MSE (lambda_star of bayes_gap.csv); amp / erm_sim:
                      simulate's sim.csv (mean and standard error over seeds).
  erm_lambda_scan.csv the factorised (trace-penalty) ERM theory at every lambda tried (curve's
                      lambda_scan.csv of every lambda_grid run, merged).
  bayes_gap.csv       alpha, bayes_mse, best_erm_mse (minimum over erm_lambda_scan.csv at that alpha),
                      lambda_star, lambda_star_at_edge (1: the smallest lambda tried, minimum not
                      bracketed), gap = best_erm_mse - bayes_mse, ratio = best_erm_mse / bayes_mse.
  amp_validate.csv    validate --set estimator=amp at the last compared iteration (prior law | oracle).
Needs python3 with matplotlib (Debian: python3-matplotlib).
"""
import csv
import glob
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def fnum(x):
    return "" if x is None or x == "" else repr(float(x))


# ---------------------------------------------------------------- collect (hdat folders -> CSVs)

def collect(runs):
    # every lambda_grid curve run: theory_grid*/lambda_scan.csv (factorised rows)
    scan = {}
    bayes = {}
    for folder in sorted(f for f in glob.glob(os.path.join(runs, "theory_grid*")) if os.path.isdir(f)):
        for r in read(os.path.join(folder, "lambda_scan.csv")):
            if r["training"] != "factorized":
                continue
            key = (float(r["alpha"]), float(r["lambda"]))
            scan[key] = (float(r["mse"]), float(r["test_error"]), int(r["converged"]))
        for r in read(os.path.join(folder, "bayes_gap.csv")):
            bayes[float(r["alpha"])] = float(r["bayes_mse"])
    write(os.path.join(HERE, "erm_lambda_scan.csv"), ["alpha", "lambda", "mse", "test_error", "converged"],
          [{"alpha": fnum(a), "lambda": fnum(l), "mse": fnum(m), "test_error": fnum(t), "converged": c}
           for (a, l), (m, t, c) in sorted(scan.items())])

    gap_rows = []
    best = {}
    for a in sorted(bayes):
        tried = sorted(l for (aa, l) in scan if aa == a and scan[(aa, l)][2] == 1)
        lstar = min(tried, key=lambda l: scan[(a, l)][0])
        m = scan[(a, lstar)][0]
        best[a] = (lstar, m)
        gap_rows.append({"alpha": fnum(a), "bayes_mse": fnum(bayes[a]), "best_erm_mse": fnum(m),
                         "lambda_star": fnum(lstar), "lambda_star_at_edge": int(lstar == tried[0]),
                         "gap": fnum(m - bayes[a]), "ratio": fnum(m / bayes[a]),
                         "lambdas_tried": " ".join(f"{l:g}" for l in tried)})
    write(os.path.join(HERE, "bayes_gap.csv"),
          ["alpha", "bayes_mse", "best_erm_mse", "lambda_star", "lambda_star_at_edge", "gap", "ratio",
           "lambdas_tried"], gap_rows)

    fields = ["series", "alpha", "d", "lambda", "mse", "mse_se", "seeds", "converged_fraction"]
    rows = []
    for r in read(os.path.join(runs, "se_dense", "curve.csv")):
        rows.append({"series": "se", "alpha": fnum(r["alpha"]), "mse": fnum(r["bayes_mse"])})
    for a, (l, m) in sorted(best.items()):
        rows.append({"series": "erm_theory", "alpha": fnum(a), "lambda": fnum(l), "mse": fnum(m)})
    for folder in sorted(glob.glob(os.path.join(runs, "amp_d*"))):
        if not os.path.basename(folder)[5:].isdigit():  # amp_d60, amp_d100, amp_d150 only
            continue
        for r in read(os.path.join(folder, "sim.csv")):
            rows.append({"series": "amp", "alpha": fnum(r["alpha"]), "d": int(r["d"]), "mse": fnum(r["mse"]),
                         "mse_se": fnum(r["mse_se"]), "seeds": int(float(r["seeds"])),
                         "converged_fraction": fnum(r["converged_fraction"])})
    for folder in sorted(glob.glob(os.path.join(runs, "erm_d*_a*"))):
        lam = json.load(open(os.path.join(folder, "run.json")))["config"]["lambda"]
        for r in read(os.path.join(folder, "sim.csv")):
            rows.append({"series": "erm_sim", "alpha": fnum(r["alpha"]), "d": int(r["d"]), "lambda": fnum(lam),
                         "mse": fnum(r["mse"]), "mse_se": fnum(r["mse_se"]), "seeds": int(float(r["seeds"])),
                         "converged_fraction": fnum(r["converged_fraction"])})
    order = {"se": 0, "erm_theory": 1, "amp": 2, "erm_sim": 3}
    rows.sort(key=lambda r: (order[r["series"]], int(r.get("d") or 0), float(r["alpha"])))
    write(os.path.join(HERE, "amp_se_erm.csv"), fields, rows)

    vrows = []
    for prior, folder in (("law", "amp_val"), ("oracle", "amp_val_oracle")):
        for r in read(os.path.join(runs, folder, "validate.csv")):
            last = max(int(x["iteration"]) for x in read(os.path.join(runs, folder, "validate.csv")))
            if int(r["iteration"]) != last:
                continue
            out = {"prior": prior}
            out.update(r)
            vrows.append(out)
    write(os.path.join(HERE, "amp_validate.csv"), ["prior"] + list(vrows[0].keys())[1:], vrows)


# ---------------------------------------------------------------- draw (CSVs -> figures)

def load():
    data = {}
    for r in read(os.path.join(HERE, "amp_se_erm.csv")):
        data.setdefault(r["series"], []).append(r)
    gap = read(os.path.join(HERE, "bayes_gap.csv"))
    return data, gap


def by_d(rows):
    out = {}
    for r in rows:
        out.setdefault(int(r["d"]), []).append(r)
    return out


def draw():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data, gap = load()
    fig, ax = plt.subplots(figsize=(7.0, 4.8))
    se = data["se"]
    ax.plot([float(r["alpha"]) for r in se], [float(r["mse"]) for r in se], "k-", lw=1.6,
            label="Bayes-optimal state evolution (d → ∞)")
    et = data["erm_theory"]
    ax.plot([float(r["alpha"]) for r in et], [float(r["mse"]) for r in et], "-", color="tab:red", lw=1.4,
            marker="o", ms=3, label="ERM theory, best λ̃ of the grid (d → ∞)")
    shift = {60: 0.985, 100: 1.0, 150: 1.015}
    blues = {60: "#9ecae1", 100: "#4292c6", 150: "#08306b"}
    for d, rows in sorted(by_d(data["amp"]).items()):
        a = [float(r["alpha"]) * shift.get(d, 1) for r in rows]
        ax.errorbar(a, [float(r["mse"]) for r in rows], yerr=[float(r["mse_se"]) for r in rows], fmt="s",
                    ms=4, capsize=2, color=blues.get(d, "tab:blue"), label=f"AMP, d = {d} (4 seeds)")
    oranges = {40: "#fdae6b", 60: "#f16913", 80: "#7f2704"}
    eshift = {40: 0.985, 60: 1.0, 80: 1.015}
    for d, rows in sorted(by_d(data["erm_sim"]).items()):
        a = [float(r["alpha"]) * eshift.get(d, 1) for r in rows]
        ax.errorbar(a, [float(r["mse"]) for r in rows], yerr=[float(r["mse_se"]) for r in rows], fmt="^",
                    ms=4, capsize=2, color=oranges.get(d, "tab:orange"), mfc="none",
                    label=f"ERM (factorised, λ̃ = λ̃*), d = {d} (4 seeds)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("α = n / d²")
    ax.set_ylabel("MSE  |Ŝ − S0|²_F / d")
    ax.set_title("Tied attention, T = 2, softmax, κ0 = 0.5, Δ = 0.1")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7.5, loc="lower left")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(HERE, f"amp_se_erm.{ext}"), dpi=150)
    plt.close(fig)

    fig, ax = plt.subplots(1, 2, figsize=(9.0, 3.6))
    a = [float(r["alpha"]) for r in gap]
    ax[0].plot(a, [float(r["gap"]) for r in gap], "o-", color="tab:purple", ms=3)
    edge = [r for r in gap if r["lambda_star_at_edge"] == "1"]
    ax[0].plot([float(r["alpha"]) for r in edge], [float(r["gap"]) for r in edge], "o", mfc="none", ms=8,
               color="tab:purple", label="λ̃* at the smallest λ̃ tried")
    ax[0].set_xscale("log")
    ax[0].set_yscale("log")
    ax[0].set_xlabel("α")
    ax[0].set_ylabel("best-λ̃ ERM MSE − Bayes MSE")
    ax[0].legend(fontsize=8)
    ax[1].plot(a, [float(r["ratio"]) for r in gap], "o-", color="tab:green", ms=3)
    ax[1].set_xscale("log")
    ax[1].set_xlabel("α")
    ax[1].set_ylabel("best-λ̃ ERM MSE / Bayes MSE")
    for x in ax:
        x.grid(True, which="both", alpha=0.25)
    fig.suptitle("Gap to Bayes optimality (theory), T = 2, softmax, κ0 = 0.5, Δ = 0.1", fontsize=10)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(HERE, f"bayes_gap.{ext}"), dpi=150)
    plt.close(fig)


def table():
    data, gap = load()
    g = {float(r["alpha"]): r for r in gap}
    amp, erm = by_d(data["amp"]), by_d(data["erm_sim"])
    alphas = sorted({float(r["alpha"]) for r in data["erm_sim"] + data["amp"]} & set(g))

    def cell(rows, a, digits=4):
        for r in rows:
            if abs(float(r["alpha"]) - a) < 1e-12:
                s = f"{float(r['mse']):.{digits}f} ± {float(r['mse_se']):.{digits}f}"
                if r.get("converged_fraction") and float(r["converged_fraction"]) < 1:
                    s += "†"
                return s
        return "–"

    head = (["α", "SE (Bayes)"] + [f"AMP d = {d}" for d in sorted(amp)] + ["ERM theory (λ̃*)"]
            + [f"ERM d = {d}" for d in sorted(erm)] + ["gap ERM − Bayes", "ratio"])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for a in alphas:
        r = g[a]
        row = [f"{a:g}", f"{float(r['bayes_mse']):.4f}"] + [cell(amp[d], a) for d in sorted(amp)]
        row += [f"{float(r['best_erm_mse']):.4f} ({float(r['lambda_star']):g})"]
        row += [cell(erm[d], a) for d in sorted(erm)]
        row += [f"{float(r['gap']):.4f}", f"{float(r['ratio']):.3f}"]
        print("| " + " | ".join(row) + " |")
    print()
    print("| α | Bayes MSE | best ERM MSE (λ̃*) | gap | ratio |")
    print("|---|---|---|---|---|")
    for r in gap:
        mark = "*" if r["lambda_star_at_edge"] == "1" else ""
        print(f"| {float(r['alpha']):g} | {float(r['bayes_mse']):.4f} | {float(r['best_erm_mse']):.4f} "
              f"({float(r['lambda_star']):g}{mark}) | {float(r['gap']):.4f} | {float(r['ratio']):.3f} |")
    path = os.path.join(HERE, "amp_validate.csv")
    if os.path.exists(path):
        print()
        print("| prior | α | SE | AMP − SE, d = 60 | d = 100 | d = 150 | extrapolated (d → ∞) | allowed | pass |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in read(path):
            if r["observable"] != "mse":
                continue
            diffs = [f"{float(r[f'diff_d{d}']):+.4f} ± {float(r[f'diff_se_d{d}']):.4f}" for d in (60, 100, 150)]
            print(f"| {r['prior']} | {float(r['alpha']):g} | {float(r['theory']):.4f} | " + " | ".join(diffs)
                  + f" | {float(r['extrapolated_diff']):+.4f} ± {float(r['extrapolated_se']):.4f} | "
                  f"{float(r['allowed']):.4f} | {r['pass']} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--collect" in args:
        collect(args[args.index("--collect") + 1])
    draw()
    if "--table" in args:
        table()
