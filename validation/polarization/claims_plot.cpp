// Figures of the claims (claims.hpp), from the CSV files of a claim folder.
#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "hdat/core/plot.hpp"
#include "hdat/core/table.hpp"
#include "hdat/polarization/claims.hpp"

namespace hdat::polarization {

namespace fs = std::filesystem;
using plot::Figure;
using plot::Panel;
using plot::Series;
using plot::Style;

namespace {

Table load(const fs::path& dir, const std::string& file) {
  return fs::exists(dir / file) ? Table::read_csv_file((dir / file).string()) : Table();
}

int tokens(const Table& t) {
  int n = 0;
  while (t.has_column(fmt::format("s_{}", n))) ++n;
  return n;
}

// y = f(row) against the column xcol (> 0 when logx), finite values only (positive when logy).
Series curve_of(const Table& t, const std::function<double(std::size_t)>& f, const std::string& label, Style st, int color, bool logx = true,
                bool logy = false, const std::string& xcol = "t") {
  Series s;
  s.label = label;
  s.style = st;
  s.color = color;
  if (t.empty() || !t.has_column(xcol)) return s;
  const std::size_t stride = std::max<std::size_t>(1, t.rows() / 1500);
  for (std::size_t r = 0; r < t.rows(); r += stride) {
    const double x = t.number(r, xcol), y = f(r);
    if ((logx && !(x > 0)) || !std::isfinite(y) || (logy && !(y > 0))) continue;
    s.x.push_back(x);
    s.y.push_back(y);
  }
  return s;
}

Series column(const Table& t, const std::string& c, const std::string& label, Style st, int color, bool logx = true, bool logy = false,
              const std::string& xcol = "t") {
  if (t.empty() || !t.has_column(c)) return Series{label, {}, {}, {}, st, color};
  return curve_of(t, [&t, c](std::size_t r) { return t.number(r, c); }, label, st, color, logx, logy, xcol);
}

Series s_max(const Table& t, const std::string& label, Style st, int color, bool logx = true) {
  if (t.empty()) return Series{label, {}, {}, {}, st, color};
  return curve_of(t, [&t](std::size_t r) { return 1.0 - t.number(r, "one_minus_s_top"); }, label, st, color, logx);
}

Panel per_token(const Table& flow, const Table& gd, const std::string& prefix, const std::string& title, bool logy) {
  Panel p{title, "t", prefix + "_i", true, logy, {}, {}, {}, {}};
  const int T = tokens(flow.empty() ? gd : flow);
  for (int i = 0; i < T && i < 10; ++i) {
    const std::string c = fmt::format("{}_{}", prefix, i);
    p.series.push_back(column(flow, c, c, Style::lines, i, true, logy));
    if (!gd.empty()) p.series.push_back(column(gd, c, "", Style::points, i, true, logy));
  }
  return p;
}

}  // namespace

void plot_claim(const std::string& claim, const fs::path& dir) {
  Figure f;
  f.columns = 2;
  const Table curve = load(dir, "curve.csv"), sim = load(dir, "sim.csv");
  if (claim == "order") {
    f.title = "order preservation: logits keep the order of u(0); the top gap grows, the others rise then shrink";
    f.panels.push_back(per_token(curve, sim, "a", "logits a_i (lines: flow, points: GD)", false));
    const Table gaps = load(dir, "gaps.csv");
    Panel g{"gaps between consecutive tokens (in the order of u(0))", "t", "gap", true, true, {}, {}, {}, {}};
    for (int k = 0; gaps.has_column(fmt::format("gap_{}", k)); ++k)
      g.series.push_back(column(gaps, fmt::format("gap_{}", k), k == 0 ? "top gap" : fmt::format("gap {}", k), k == 0 ? Style::lines : Style::dashed, k,
                                true, true));
    f.panels.push_back(g);
    f.panels.push_back(per_token(curve, sim, "u", "projections u_i", false));
    f.panels.push_back(per_token(curve, Table(), "s", "weights s_i", true));
  } else if (claim == "polarization") {
    f.title = "polarisation to argmax u(0) at logarithmic rates";
    f.panels.push_back(per_token(curve, sim, "s", "weights s_i (lines: flow, points: GD lr 0.1)", true));
    const int T = tokens(curve);
    Panel e{"(1 - s_top) log^2 t -> 2(T-1)/T", "t", "(1 - s_top) log^2 t", true, false, {}, {}, {}, {}};
    e.series.push_back(column(curve, "eps_log2t", "flow", Style::lines, 0));
    e.series.push_back(column(sim, "eps_log2t", "GD", Style::points, 1));
    e.hlines.push_back({2.0 * (T - 1) / T, "2(T-1)/T"});
    e.yrange = std::make_pair(0.0, 6.0);
    f.panels.push_back(e);
    Panel z{"z - log t -> 0", "t", "z - log t", true, false, {}, {}, {}, {}};
    z.series.push_back(column(curve, "z_minus_logt", "flow", Style::lines, 0));
    z.series.push_back(column(sim, "z_minus_logt", "GD", Style::points, 1));
    z.yrange = std::make_pair(-3.0, 0.5);
    f.panels.push_back(z);
    f.panels.push_back(per_token(curve, Table(), "u", "u_i: u_top ~ log t, the others level off", false));
  } else if (claim == "square") {
    f.title = "square loss: partial polarisation (weights freeze inside the simplex)";
    const Table lg = load(dir, "logistic.csv"), un = load(dir, "uniform.csv");
    f.panels.push_back(per_token(curve, sim, "s", "square loss: weights s_i (lines: flow, points: GD)", false));
    Panel m{"top weight: square vs logistic loss", "t", "s_top", true, false, {}, {}, {}, {}};
    m.series.push_back(s_max(curve, "square", Style::lines, 0));
    m.series.push_back(s_max(lg, "logistic", Style::dashed, 1));
    m.series.push_back(s_max(un, "square, V(0) = 0, a(0) = 0 (stays 1/T)", Style::lines, 2));
    f.panels.push_back(m);
    Panel l{"loss", "t", "loss", true, true, {}, {}, {}, {}};
    l.series.push_back(column(curve, "loss", "square", Style::lines, 0, true, true));
    l.series.push_back(column(lg, "loss", "logistic", Style::dashed, 1, true, true));
    f.panels.push_back(l);
  } else if (claim == "regression") {
    f.title = "regression |y - X W s|^2: polarisation grows with the condition number";
    Panel m{"max weight (lines: flow, points: GD)", "t", "max_i s_i", true, false, {}, {}, {}, {}};
    for (int k = 1; k <= 5; ++k) {
      m.series.push_back(s_max(load(dir, fmt::format("curve_kappa{}.csv", k)), fmt::format("kappa = {}", k), Style::lines, k - 1));
      m.series.push_back(s_max(load(dir, fmt::format("sim_kappa{}.csv", k)), "", Style::points, k - 1));
    }
    m.yrange = std::make_pair(0.0, 1.35);  // room for the key above the curves
    f.panels.push_back(m);
    const Table sum = load(dir, "regression.csv");
    Panel k{"final max weight against kappa", "kappa", "max_i s_i", false, false, {}, {}, {}, {}};
    k.series.push_back(column(sum, "s_max_gd", "GD", Style::linespoints, 0, false, false, "kappa"));
    k.series.push_back(column(sum, "s_max_flow", "flow", Style::dashed, 1, false, false, "kappa"));
    k.series.push_back(column(sum, "reference", "spec reference", Style::points, 2, false, false, "kappa"));
    k.yrange = std::make_pair(0.0, 1.35);
    k.xrange = std::make_pair(0.8, 5.2);
    f.panels.push_back(k);
  } else if (claim == "normalizations") {
    f.title = "which normalisations polarise (logistic loss; lines: flow, points: GD lr 0.5)";
    f.columns = 4;
    for (const std::string nm : {"softmax", "square", "relu", "l1", "sum", "sigmoid", "elementwise_relu"}) {
      const Table fl = load(dir, "curve_" + nm + ".csv"), gd = load(dir, "sim_" + nm + ".csv");
      Panel p = per_token(fl, gd, "s", nm, false);
      for (auto& s : p.series) s.label.clear();
      f.panels.push_back(p);
    }
  } else if (claim == "tied") {
    f.title = "tied model U s(U a): one value column grows (massive activation)";
    Panel m{"max weight (lines: flow, points: GD)", "t", "max_i s_i", true, false, {}, {}, {}, {}};
    Panel c{"winner's column norm |U e_top| (others: dashed)", "t", "column norm", true, false, {}, {}, {}, {}};
    int k = 0;
    for (int D : {10, 20, 50, 100}) {
      const Table fl = load(dir, fmt::format("curve_D{}.csv", D)), gd = load(dir, fmt::format("sim_D{}.csv", D));
      m.series.push_back(s_max(fl, fmt::format("D = {}", D), Style::lines, k));
      m.series.push_back(s_max(gd, "", Style::points, k));
      c.series.push_back(column(gd, "top_col_norm", fmt::format("D = {}", D), Style::lines, k));
      c.series.push_back(column(gd, "max_other_col_norm", "", Style::dashed, k));
      ++k;
    }
    m.yrange = std::make_pair(0.0, 1.35);
    c.yrange = std::make_pair(0.0, 9.0);
    f.panels.push_back(m);
    f.panels.push_back(c);
  } else if (claim == "sign") {
    f.title = "the replicator sign: +gamma C(s)u agrees with gradient descent, -gamma C(s)u does not";
    Panel g{"RMS gap of the logits a, |GD - flow|, against the step", "eta", "gap", true, true, {}, {}, {}, {}};
    const Table plus = load(dir, "convergence_plus.csv"), minus = load(dir, "convergence_minus.csv");
    g.series.push_back(column(plus, "gap_a", "+gamma (derived): O(eta)", Style::linespoints, 0, true, true, "lr"));
    g.series.push_back(column(minus, "gap_a", "-gamma: O(1)", Style::linespoints, 1, true, true, "lr"));
    f.panels.push_back(g);
    Panel s{"top weight", "t", "s_top", true, false, {}, {}, {}, {}};
    s.series.push_back(s_max(load(dir, "curve_plus.csv"), "flow, +gamma", Style::lines, 0));
    s.series.push_back(s_max(load(dir, "curve_minus.csv"), "flow, -gamma", Style::dashed, 1));
    s.series.push_back(s_max(sim, "GD", Style::points, 2));
    f.panels.push_back(s);
  }
  plot::render(f, dir / "claim");
}

}  // namespace hdat::polarization
