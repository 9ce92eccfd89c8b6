// The figures of a `tied-attention` folder: learning curves against the simulation, spectra,
// scaling laws, the factorised-vs-direct comparison (read back from the folder's tables).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "hdat/core/plot.hpp"
#include "hdat/core/table.hpp"
#include "hdat/tied_attention/bayes_optimal.hpp"
#include "hdat/tied_attention/declaration.hpp"

namespace hdat::tied_attention {

namespace {

std::vector<double> column(const Table& t, const std::string& c) { return t.has_column(c) ? t.numbers(c) : std::vector<double>{}; }

// Rows of `t` where column `key` equals `value`.
Table filter_rows(const Table& t, const std::string& key, double value) {
  Table out(t.columns());
  for (std::size_t i = 0; i < t.rows(); ++i)
    if (t.number(i, key) == value) out.add_row(t.row(i));
  return out;
}

plot::Series line(const std::string& label, std::vector<double> x, std::vector<double> y, plot::Style st = plot::Style::lines,
                  int color = -1) {
  plot::Series s;
  s.label = label;
  s.x = std::move(x);
  s.y = std::move(y);
  s.style = st;
  s.color = color;
  return s;
}

plot::Series vline(const std::string& label, double x, double y0, double y1, int color) {
  return line(label, {x, x}, {y0, y1}, plot::Style::dashed, color);
}


void add_sim_points(plot::Panel& panel, const Table& sim, const std::string& col, int color_base) {
  if (sim.empty() || !sim.has_column(col)) return;
  int c = color_base;
  for (double d : distinct(sim.numbers("d"))) {
    const Table s = filter_rows(sim, "d", d);
    plot::Series e = line(fmt::format("ERM d = {}", d), s.numbers("alpha"), s.numbers(col), plot::Style::errorbars, c++);
    e.yerr = column(s, col + "_se");
    panel.series.push_back(e);
  }
}

}  // namespace

// The figures of plot_folder, one per kind of table the run wrote.
namespace tied_figures {
namespace {

namespace fs = std::filesystem;

Table read_table(const fs::path& dir, const char* name) { return Table::read_csv_file((dir / name).string()); }

// One panel of the learning curves: the column's theory curve and its ERM points per d.
struct CurveObservable {
  const char* column;
  const char* title;
};
const CurveObservable kCurveObservables[] = {{"mse", "matrix error |S - S0|_F^2/d"},
                                             {"test_error", "test error (fresh samples)"},
                                             {"train_loss", "training loss per sample"},
                                             {"rank", "rank(S)/d"}};

// The simulated alphas with a margin, so that the outermost ERM points are not on the frame.
std::pair<double, double> padded_alpha_range(const Table& sim) {
  const auto a = sim.numbers("alpha");
  const double lo = *std::min_element(a.begin(), a.end()), hi = *std::max_element(a.begin(), a.end());
  const double pad = 0.08 * std::max(hi - lo, 0.1 * hi);
  return std::make_pair(std::max(0.0, lo - pad), hi + pad);
}

// Dashed verticals at the interpolation and perfect-recovery thresholds, as tall as the panel's data.
void add_threshold_lines(plot::Panel& panel, const json& thresholds) {
  double top = 0;
  for (const auto& s : panel.series)
    for (double y : s.y)
      if (std::isfinite(y)) top = std::max(top, y);
  if (thresholds.contains("alpha_interp") && thresholds["alpha_interp"].is_number())
    panel.series.push_back(vline("alpha_interp", thresholds["alpha_interp"].get<double>(), 0, top, 7));
  if (thresholds.contains("alpha_perf")) panel.series.push_back(vline("alpha_perf", thresholds["alpha_perf"].get<double>(), 0, top, 8));
}

plot::Panel learning_curve_panel(const CurveObservable& o, const Table& curve, const Table& sim, const json& run) {
  const std::string col = o.column;
  plot::Panel panel;
  panel.title = o.title;
  panel.xlabel = "alpha = n/d^2";
  panel.ylabel = col;
  if (!curve.empty()) panel.series.push_back(line("theory", curve.numbers("alpha"), curve.numbers(col), plot::Style::lines, 0));
  if (!curve.empty() && col == "mse" && curve.has_column("bayes_mse"))
    panel.series.push_back(line("Bayes-optimal", curve.numbers("alpha"), curve.numbers("bayes_mse"), plot::Style::dashed, 1));
  add_sim_points(panel, sim, col, 2);
  if (!sim.empty()) panel.xrange = padded_alpha_range(sim);
  if (run.contains("thresholds") && (col == "mse" || col == "train_loss")) add_threshold_lines(panel, run["thresholds"]);
  return panel;
}

// DIR/curve, DIR/sim or DIR/validate (after the command): theory against ERM.
void plot_learning_curves(const fs::path& dir, const json& run, const Table& curve, const Table& sim) {
  const std::string command = run.value("command", "");
  const json& config = run["config"];
  plot::Figure f;
  f.title = fmt::format("tied-attention {}: T = {}, kappa0 = {}, noise = {}, lambda = {}", command, config.value("T", 0),
                        config.value("kappa0", 0.0), config.value("noise", 0.0), config.value("lambda", 0.0));
  for (const CurveObservable& o : kCurveObservables) f.panels.push_back(learning_curve_panel(o, curve, sim, run));
  plot::render(f, dir / (command == "curve" ? "curve" : command == "simulate" ? "sim" : "validate"));
}

// DIR/spectrum: the bulk of S's eigenvalues with its outliers, and the singular values of W.
void plot_spectrum(const fs::path& dir, const json& run) {
  const Table sp = read_table(dir, "spectrum.csv");
  const Table sw = read_table(dir, "spectrum_w.csv");
  const auto& info = run["spectrum"];
  plot::Figure f;
  f.title = fmt::format("learned spectrum at alpha = {}: atom {:.4f} at 0, {} outliers", info.value("alpha", 0.0),
                        info.value("atom_at_zero", 0.0), info["outliers"].size());
  plot::Panel a;
  a.title = "eigenvalues of S (bulk)";
  a.xlabel = "x";
  a.ylabel = "density";
  a.series.push_back(line("theory", sp.numbers("x"), sp.numbers("density"), plot::Style::lines, 0));
  for (const auto& o : info["outliers"]) a.series.push_back(vline("", o["position"].get<double>(), 0, 0.05, 1));
  plot::Panel b;
  b.title = "singular values of W / sqrt(d)";
  b.xlabel = "sigma";
  b.ylabel = "density";
  b.series.push_back(line("theory", sw.numbers("sv"), sw.numbers("density"), plot::Style::lines, 0));
  f.panels = {a, b};
  plot::render(f, dir / "spectrum");
}

// The excess error against n/d, with the fitted power law and the predicted slope -f(gamma).
plot::Panel excess_error_panel(const Table& dc, const json& scaling) {
  plot::Panel a;
  a.title = "excess error against n/d";
  a.xlabel = "n/d";
  a.ylabel = "excess error";
  a.logx = a.logy = true;
  a.series.push_back(line("theory", dc.numbers("n_over_d"), dc.numbers("excess_error"), plot::Style::linespoints, 0));
  if (!scaling["exponent"].is_number()) return a;
  std::vector<double> x = dc.numbers("n_over_d"), y;
  for (double v : x) y.push_back(scaling["prefactor"].get<double>() * std::pow(v, -scaling["exponent"].get<double>()));
  a.series.push_back(line("fit", x, y, plot::Style::dashed, 1));
  std::vector<double> yf;
  for (double v : x) yf.push_back(y.front() * std::pow(v / x.front(), -scaling["f_gamma"].get<double>()));
  a.series.push_back(line("slope -f(gamma)", x, yf, plot::Style::dashed, 2));
  return a;
}

plot::Panel emergence_panel(const Table& dc) {
  plot::Panel b;
  b.title = "emergence: learned outliers";
  b.xlabel = "n/d";
  b.ylabel = "count";
  b.logx = true;
  b.series.push_back(line("outliers above the threshold", dc.numbers("n_over_d"), dc.numbers("outliers"), plot::Style::linespoints, 0));
  b.series.push_back(line("K(delta) = #{s_i > delta}", dc.numbers("n_over_d"), dc.numbers("K_delta"), plot::Style::dashed, 1));
  return b;
}

// The MSE as overfitting + underfitting + approximation.
plot::Panel decomposition_panel(const Table& dc) {
  plot::Panel c;
  c.title = "error decomposition";
  c.xlabel = "n/d";
  c.ylabel = "contribution to |S - S0|^2/d";
  c.logx = c.logy = true;
  c.series.push_back(line("MSE (full theory)", dc.numbers("n_over_d"), dc.numbers("mse"), plot::Style::lines, 0));
  c.series.push_back(line("overfitting (bulk)", dc.numbers("n_over_d"), dc.numbers("E_over"), plot::Style::linespoints, 1));
  c.series.push_back(line("underfitting (hidden modes)", dc.numbers("n_over_d"), dc.numbers("E_under"), plot::Style::linespoints, 2));
  c.series.push_back(line("approximation (outliers)", dc.numbers("n_over_d"), dc.numbers("E_approx"), plot::Style::linespoints, 3));
  c.series.push_back(line("sum", dc.numbers("n_over_d"), dc.numbers("E_sum"), plot::Style::dashed, 4));
  return c;
}

// DIR/scaling: the power-law target's scaling law.
void plot_scaling(const fs::path& dir, const json& run) {
  const Table dc = read_table(dir, "decomposition.csv");
  const auto& sc = run["scaling"];
  plot::Figure f;
  f.title = fmt::format("power-law target, gamma = {}: fitted exponent {} (f(gamma) = 1 - 1/(2 gamma) = {:.3f})",
                        run["config"].value("gamma", 0.0),
                        sc["exponent"].is_number() ? fmt::format("{:.3f}", sc["exponent"].get<double>()) : std::string("n/a"),
                        sc.value("f_gamma", 0.0));
  f.panels = {excess_error_panel(dc, sc), emergence_panel(dc), decomposition_panel(dc)};
  f.columns = 3;
  plot::render(f, dir / "scaling");
}

// The cross-validated ERM test error of one training (factorised or direct).
plot::Series compare_sim_series(const Table& t, int k) {
  Table sub(t.columns());
  for (std::size_t i = 0; i < t.rows(); ++i)
    if (t.text(i, "training") == training_name(kTrainings[k])) sub.add_row(t.row(i));
  plot::Series e = line(std::string("ERM (cross-validated), ") + training_name(kTrainings[k]), sub.numbers("alpha"), sub.numbers("test_error"),
                        plot::Style::errorbars, k);
  e.yerr = sub.numbers("test_error_se");
  return e;
}

// DIR/compare: factorised against direct training, theory and/or ERM.
void plot_compare(const fs::path& dir) {
  plot::Figure f;
  f.title = "factorised (weight decay on W) vs direct (Frobenius on S) training, each at its best lambda";
  plot::Panel a;
  a.xlabel = "alpha = n/d^2";
  a.ylabel = "test error";
  if (fs::exists(dir / "compare.csv")) {
    const Table t = read_table(dir, "compare.csv");
    a.series.push_back(line("theory, factorised", t.numbers("alpha"), t.numbers("test_error_factorized"), plot::Style::lines, 0));
    a.series.push_back(line("theory, direct", t.numbers("alpha"), t.numbers("test_error_direct"), plot::Style::lines, 1));
  }
  if (fs::exists(dir / "compare_sim.csv")) {
    const Table t = read_table(dir, "compare_sim.csv");
    for (int k = 0; k < 2; ++k) a.series.push_back(compare_sim_series(t, k));
  }
  f.panels = {a};
  f.columns = 1;
  plot::render(f, dir / "compare");
}

// The eigenvalue histogram carried over to the singular values of W / sqrt(d):
// sigma = (sqrt(kappa) x)^{1/2}, density x 2 sigma/sqrt(kappa).
plot::Panel singular_value_panel(const Table& h, double kappa) {
  std::vector<double> sv, ds, dt;
  const auto x = h.numbers("x"), ys = h.numbers("sim_density"), yt = h.numbers("theory_density");
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double sg = std::sqrt(std::sqrt(kappa) * x[i]);
    sv.push_back(sg);
    ds.push_back(ys[i] * 2 * sg / std::sqrt(kappa));
    dt.push_back(yt[i] * 2 * sg / std::sqrt(kappa));
  }
  plot::Panel b;
  b.title = "singular values of W / sqrt(d)";
  b.xlabel = "sigma";
  b.ylabel = "density (bulk)";
  b.series.push_back(line("ERM (pooled seeds)", sv, ds, plot::Style::points, 2));
  b.series.push_back(line("theory", sv, dt, plot::Style::lines, 0));
  return b;
}

// DIR/histogram: the learned S's eigenvalues (pooled over seeds) against the theory.
void plot_histogram(const fs::path& dir, const json& run) {
  const Table h = read_table(dir, "histogram.csv");
  plot::Figure f;
  const auto& info = run["histogram"];
  f.title = fmt::format("eigenvalues of the learned S, alpha = {}, d = {}: atom {:.3f} (theory {:.3f})", info.value("alpha", 0.0),
                        info.value("d", 0), info.value("atom_sim", 0.0), info.value("atom_theory", 0.0));
  plot::Panel a;
  a.title = "eigenvalues of S";
  a.xlabel = "eigenvalue";
  a.ylabel = "density (bulk)";
  a.series.push_back(line("ERM (pooled seeds)", h.numbers("x"), h.numbers("sim_density"), plot::Style::points, 2));
  a.series.push_back(line("theory", h.numbers("x"), h.numbers("theory_density"), plot::Style::lines, 0));
  f.panels = {a, singular_value_panel(h, run["config"].value("kappa", 1.0))};
  f.columns = 2;
  plot::render(f, dir / "histogram");
}

}  // namespace
}  // namespace tied_figures

void plot_folder(const std::filesystem::path& dir) {
  using namespace tied_figures;
  amp_plot_folder(dir);
  const json run = json::parse(read_file(dir / "run.json"));
  if (run.value("estimator", "") == "amp" || fs::exists(dir / "amp_trajectory.csv")) return;  // AMP's figures only
  const auto has = [&](const char* f) { return fs::exists(dir / f); };
  const Table curve = has("curve.csv") ? read_table(dir, "curve.csv") : Table();
  const Table sim = has("sim.csv") ? read_table(dir, "sim.csv") : Table();
  if (!curve.empty() || !sim.empty()) plot_learning_curves(dir, run, curve, sim);
  if (has("spectrum.csv")) plot_spectrum(dir, run);
  if (has("decomposition.csv")) plot_scaling(dir, run);
  if (has("compare.csv") || has("compare_sim.csv")) plot_compare(dir);
  if (has("histogram.csv")) plot_histogram(dir, run);
}

std::vector<double> distinct(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}


}  // namespace hdat::tied_attention
