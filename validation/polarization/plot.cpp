#include "hdat/polarization/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "hdat/core/output.hpp"
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

int count_prefix(const Table& t, const std::string& prefix) {
  int n = 0;
  while (t.has_column(fmt::format("{}_{}", prefix, n))) ++n;
  return n;
}

// (x, y) of two columns, keeping rows with x >= 0 when logx (t = 0 has its own tic), finite y (and y > 0 when logy).
Series series(const Table& t, const std::string& xc, const std::string& yc, const std::string& label, Style st, bool logx,
              bool logy = false, int color = -1) {
  Series s;
  s.label = label;
  s.style = st;
  s.color = color;
  if (!t.has_column(xc) || !t.has_column(yc)) return s;
  const auto x = t.numbers(xc), y = t.numbers(yc);
  const std::size_t stride = std::max<std::size_t>(1, x.size() / 1500);
  for (std::size_t i = 0; i < x.size(); i += stride) {
    if (logx && x[i] < 0) continue;
    if (!std::isfinite(y[i]) || (logy && !(y[i] > 0))) continue;
    s.x.push_back(x[i]);
    s.y.push_back(y[i]);
  }
  return s;
}

nlohmann::json read_run(const fs::path& dir) {
  try {
    if (fs::exists(dir / "run.json")) return nlohmann::json::parse(read_file(dir / "run.json"));
  } catch (...) {
  }
  return nlohmann::json::object();
}

void plot_dynamics(const fs::path& dir, const nlohmann::json& run) {
  const bool has_curve = fs::exists(dir / "curve.csv"), has_sim = fs::exists(dir / "sim.csv");
  Table curve = has_curve ? Table::read_csv_file((dir / "curve.csv").string()) : Table();
  Table sim = has_sim ? Table::read_csv_file((dir / "sim.csv").string()) : Table();
  const Table& ref = has_curve ? curve : sim;
  const int T = count_prefix(ref, "s");
  const double beta_norm = run.contains("config") ? run["config"].value("beta_norm", 1.0) : 1.0;
  const double b = beta_norm * beta_norm;
  Figure f;
  f.title = run.contains("config")
                ? fmt::format("polarization: {} loss, {} (T = {})", run["config"].value("loss", "?"), run["config"].value("normalization", "?"), T)
                : "polarization";
  f.columns = 3;
  auto per_token = [&](const std::string& prefix, const std::string& title, const std::string& ylabel, bool logy) {
    Panel p;
    p.title = title;
    p.xlabel = "t";
    p.ylabel = ylabel;
    p.logx = true;
    p.logy = logy;
    for (int i = 0; i < T && i < 10; ++i) {
      const std::string col = fmt::format("{}_{}", prefix, i);
      if (has_curve) p.series.push_back(series(curve, "t", col, has_sim ? "" : col, Style::lines, true, logy, i));
      if (has_sim) p.series.push_back(series(sim, "t", col, has_curve ? (i == 0 ? "GD (points)" : "") : col, Style::points, true, logy, i));
    }
    return p;
  };
  const std::string how = has_curve && has_sim ? " (lines: flow, points: GD)" : has_sim ? " (gradient descent)" : " (flow)";
  // Log scale for weights on the simplex; linear when some leave it (sum) or are not normalised.
  bool positive = true;
  for (int i = 0; i < T && positive; ++i)
    for (double v : ref.numbers(fmt::format("s_{}", i))) positive = positive && v >= 0 && v <= 1;
  f.panels.push_back(per_token("s", "weights s_i" + how, "s_i", positive));
  f.panels.push_back(per_token("a", "logits a_i", "a_i", false));
  f.panels.push_back(per_token("u", "projections u_i = <V e_i, β*>", "u_i", false));
  Panel loss{"loss", "t", "loss", true, true, {}, {}, {}, {}};
  if (has_curve) loss.series.push_back(series(curve, "t", "loss", "flow", Style::lines, true, true, 0));
  if (has_sim) loss.series.push_back(series(sim, "t", "loss", "GD", Style::points, true, true, 1));
  f.panels.push_back(loss);
  Panel eps{"(1 - s_top) log^2 t", "t", "(1 - s_top) log^2 t", true, false, {}, {}, {}, {}};
  if (has_curve) eps.series.push_back(series(curve, "t", "eps_log2t", "flow", Style::lines, true, false, 0));
  if (has_sim) eps.series.push_back(series(sim, "t", "eps_log2t", "GD", Style::points, true, false, 1));
  eps.hlines.push_back({2.0 * b * (T - 1) / T, "2b(T-1)/T"});
  eps.yrange = std::make_pair(0.0, 4.0 * b * (T - 1) / T + 2.0);
  f.panels.push_back(eps);
  Panel zl{"z - log t", "t", "z - log t", true, false, {}, {}, {}, {}};
  if (has_curve) zl.series.push_back(series(curve, "t", "z_minus_logt", "flow", Style::lines, true, false, 0));
  if (has_sim) zl.series.push_back(series(sim, "t", "z_minus_logt", "GD", Style::points, true, false, 1));
  zl.hlines.push_back({std::log(b), "log b"});
  zl.yrange = std::make_pair(std::log(b) - 3.0, std::log(b) + 1.0);
  f.panels.push_back(zl);
  Panel gaps{"logit gaps", "t", "gap", true, true, {}, {}, {}, {}};
  const Table& g = has_curve ? curve : sim;
  gaps.series.push_back(series(g, "t", "top_gap", "top gap a_top - max_{j!=top} a_j", Style::lines, true, true, 0));
  gaps.series.push_back(series(g, "t", "min_gap", "smallest consecutive gap", Style::lines, true, true, 1));
  f.panels.push_back(gaps);
  Panel ent{"entropy of s", "t", "entropy", true, false, {}, {}, {}, {}};
  if (has_curve) ent.series.push_back(series(curve, "t", "entropy", "flow", Style::lines, true, false, 0));
  if (has_sim) ent.series.push_back(series(sim, "t", "entropy", "GD", Style::points, true, false, 1));
  f.panels.push_back(ent);
  Panel cn{"value column norms (massive activation)", "t", "|V e_j|", true, false, {}, {}, {}, {}};
  cn.series.push_back(series(g, "t", "top_col_norm", "winner |V e_top|", Style::lines, true, false, 0));
  cn.series.push_back(series(g, "t", "max_other_col_norm", "max_{j!=top} |V e_j|", Style::lines, true, false, 1));
  f.panels.push_back(cn);
  plot::render(f, dir / "polarization");
}

void plot_convergence(const fs::path& dir) {
  const Table conv = Table::read_csv_file((dir / "convergence.csv").string());
  Figure f;
  f.title = "gradient descent against the flow";
  f.columns = 2;
  Panel p{"RMS gap of every block against the step (O(eta) expected)", "eta", "gap", true, true, {}, {}, {}, {}};
  int color = 0;
  double largest = 0;
  for (const auto& c : conv.columns())
    if (c.rfind("gap_", 0) == 0) {
      p.series.push_back(series(conv, "lr", c, c.substr(4), Style::linespoints, true, true, color++));
      if (conv.rows()) largest = std::max(largest, conv.number(0, c));
    }
  // Reference slope 1 through the largest gap at the largest step.
  const auto lr = conv.numbers("lr");
  if (!lr.empty() && largest > 0) {
    Series ref;
    ref.label = "slope 1";
    ref.style = Style::dashed;
    ref.color = 7;
    for (double e : lr) ref.x.push_back(e), ref.y.push_back(largest * e / lr[0]);
    p.series.push_back(ref);
  }
  f.panels.push_back(p);
  if (fs::exists(dir / "validate_curves.csv") && !lr.empty()) {
    // The smallest step's rows.
    const Table all = Table::read_csv_file((dir / "validate_curves.csv").string());
    Table finest({"t", "loss_theory", "loss_sim"});
    for (std::size_t r = 0; r < all.rows(); ++r)
      if (all.number(r, "lr") == lr.back()) finest.add_row({all.number(r, "t"), all.number(r, "loss_theory"), all.number(r, "loss_sim")});
    Panel q{"loss: flow (line) and GD at the smallest eta (points)", "t", "loss", true, true, {}, {}, {}, {}};
    q.series.push_back(series(finest, "t", "loss_theory", "flow", Style::lines, true, true, 0));
    q.series.push_back(series(finest, "t", "loss_sim", "GD", Style::points, true, true, 1));
    f.panels.push_back(q);
  }
  plot::render(f, dir / "convergence");
}

}  // namespace

std::vector<std::string> plot_folder(const fs::path& dir) {
  std::vector<std::string> out;
  const nlohmann::json run = read_run(dir);
  if (fs::exists(dir / "claim.csv")) {
    std::string claim = run.contains("config") ? run["config"].value("claim", "") : "";
    if (claim.empty() && fs::exists(dir / "claim.json")) claim = nlohmann::json::parse(read_file(dir / "claim.json")).value("claim", "");
    if (!claim.empty()) {
      plot_claim(claim, dir);
      out.push_back("claim");
    }
    return out;
  }
  if (fs::exists(dir / "curve.csv") || fs::exists(dir / "sim.csv")) {
    plot_dynamics(dir, run);
    out.push_back("polarization");
  }
  if (fs::exists(dir / "convergence.csv")) {
    plot_convergence(dir);
    out.push_back("convergence");
  }
  return out;
}

}  // namespace hdat::polarization
