// Figures of the specialization model's output folders (used by `hdat plot DIR`).
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/table.hpp"

namespace hdat::specialization {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> columns_of_block(const Table& t, const std::string& block) {
  std::vector<std::string> out;
  for (const auto& c : t.columns())
    if (c.rfind(block + "_", 0) == 0 && c.find("_se") == std::string::npos) out.push_back(c);
  return out;
}

// Every time (t = 0 has its own tic on the log axes).
std::vector<std::size_t> positive_rows(const Table& t) {
  std::vector<std::size_t> r;
  for (std::size_t i = 0; i < t.rows(); ++i)
    if (t.number(i, "t") >= 0) r.push_back(i);
  return r;
}

plot::Series series_of(const Table& t, const std::vector<std::size_t>& rows, const std::string& col, plot::Style style, int color,
                       const std::string& se_col = "") {
  plot::Series s;
  s.label = col;
  s.style = style;
  s.color = color;
  for (std::size_t r : rows) {
    s.x.push_back(t.number(r, "t"));
    s.y.push_back(t.number(r, col));
    if (!se_col.empty()) s.yerr.push_back(t.number(r, se_col));
  }
  return s;
}

void plot_curve(const fs::path& dir, const nlohmann::json& run, const std::string& file, bool with_errors) {
  const Table t = Table::read_csv_file((dir / file).string());
  const auto rows = positive_rows(t);
  const plot::Style style = with_errors ? plot::Style::errorbars : plot::Style::lines;
  plot::Figure f;
  f.title = fmt::format("specialization: {} ({}, H={}, F={})", with_errors ? "simulation" : "theory",
                        run["config"].value("activation", std::string("?")), run["config"].value("H", 0), run["config"].value("F", 0));
  f.columns = 3;
  plot::Panel risk{"risk", "t", "risk", true, false, {}, {}, {}, {}};
  risk.series.push_back(series_of(t, rows, "risk", style, 0, with_errors ? "risk_se" : ""));
  if (run.contains("bayes_risk")) risk.hlines.push_back({run["bayes_risk"].get<double>(), "Bayes risk"});
  if (run.contains("events") && run["events"]["plateau_end"].is_number())
    risk.title = fmt::format("risk (plateau ends at t = {:.3g})", run["events"]["plateau_end"].get<double>());
  f.panels.push_back(risk);
  for (const char* block : {"M", "R"}) {
    plot::Panel p{std::string(block) + (block[0] == 'M' ? ": head-spike overlaps" : ": head-head overlaps"), "t", block, true, false,
                  {}, {}, {}, {}};
    p.legend = "top left";  // the overlaps grow to the right: keep the key off the curves' ends
    int color = 0;
    for (const auto& c : columns_of_block(t, block))
      p.series.push_back(series_of(t, rows, c, style, color++, with_errors ? c + "_se" : ""));
    f.panels.push_back(p);
  }
  plot::render(f, dir / (with_errors ? "sim" : "curve"));
  if (fs::exists(dir / "prune.csv")) {
    const Table pr = Table::read_csv_file((dir / "prune.csv").string());
    plot::Figure g;
    plot::Panel p{"risk after pruning (best subset of each size)", "kept heads", "risk", false, false, {}, {}, {}, {}};
    plot::Series s{"risk", {}, {}, {}, plot::Style::errorbars, 0};
    for (std::size_t r = 0; r < pr.rows(); ++r) {
      s.x.push_back(pr.number(r, "kept_heads"));
      s.y.push_back(pr.number(r, "risk"));
      s.yerr.push_back(pr.number(r, "risk_se"));
    }
    p.series.push_back(s);
    if (run.contains("bayes_risk")) p.hlines.push_back({run["bayes_risk"].get<double>(), "Bayes risk"});
    g.panels.push_back(p);
    g.columns = 1;
    plot::render(g, dir / "prune");
  }
}

void plot_stability(const fs::path& dir) {
  const Table sp = Table::read_csv_file((dir / "spectrum.csv").string());
  const nlohmann::json st = nlohmann::json::parse(read_file(dir / "stability.json"));
  plot::Figure f;
  f.title = "linear stability of the unspecialized phase";
  f.columns = 3;
  plot::Panel spec{"Jacobian spectrum at the fixed point", "Re eigenvalue", "Im eigenvalue", false, false, {}, {}, {}, {}};
  plot::Series sym{"symmetric", {}, {}, {}, plot::Style::points, 0}, hd{"head-difference", {}, {}, {}, plot::Style::points, 1};
  for (std::size_t r = 0; r < sp.rows(); ++r) {
    plot::Series& s = sp.text(r, "kind") == "symmetric" ? sym : hd;
    s.x.push_back(sp.number(r, "re"));
    s.y.push_back(sp.number(r, "im"));
  }
  spec.series = {sym, hd};
  f.panels.push_back(spec);
  if (fs::exists(dir / "escape.csv")) {
    const Table e = Table::read_csv_file((dir / "escape.csv").string());
    plot::Panel esc{"plateau escape time", "log D", "t_escape", false, false, {}, {}, {}, {}};
    plot::Series th{"D=inf flow from D's initial overlaps", {}, {}, {}, plot::Style::points, 0};
    plot::Series sim{"online SGD (seed mean, SE)", {}, {}, {}, plot::Style::errorbars, 1};
    plot::Series asym{"t0 + log D / (2 lambda_max)", {}, {}, {}, plot::Style::dashed, 0};
    plot::Series pth{"growth along the plateau (anchored)", {}, {}, {}, plot::Style::lines, 0};
    plot::Series psim{"", {}, {}, {}, plot::Style::lines, 1};
    for (std::size_t r = 0; r < e.rows(); ++r) {
      const double x = e.number(r, "log_D");
      th.x.push_back(x), th.y.push_back(e.number(r, "theory_escape"));
      asym.x.push_back(x), asym.y.push_back(e.number(r, "asymptotic_theory"));
      pth.x.push_back(x), pth.y.push_back(e.number(r, "along_plateau_theory"));
      if (std::isfinite(e.number(r, "sim_escape_mean"))) {
        sim.x.push_back(x), sim.y.push_back(e.number(r, "sim_escape_mean"));
        sim.yerr.push_back(std::isfinite(e.number(r, "sim_escape_se")) ? e.number(r, "sim_escape_se") : 0.0);
        psim.x.push_back(x), psim.y.push_back(e.number(r, "along_plateau_sim"));
      }
    }
    esc.series = {th, asym, pth};
    if (!sim.x.empty()) esc.series.push_back(sim), esc.series.push_back(psim);
    f.panels.push_back(esc);
  }
  if (fs::exists(dir / "growth.csv")) {
    const Table g = Table::read_csv_file((dir / "growth.csv").string());
    plot::Panel gp{"head-difference growth rate along the symmetric flow", "t", "lambda(t)", false, false, {}, {}, {}, {}};
    plot::Series s{"lambda(t)", {}, {}, {}, plot::Style::lines, 1};
    for (std::size_t r = 0; r < g.rows(); ++r) s.x.push_back(g.number(r, "t")), s.y.push_back(g.number(r, "lambda"));
    gp.series.push_back(s);
    if (st["lambda_max"].is_number()) gp.hlines.push_back({st["lambda_max"].get<double>(), "lambda_max at the fixed point"});
    f.panels.push_back(gp);
  }
  plot::render(f, dir / "stability");
}

}  // namespace

void plot_specialization(const fs::path& dir) {
  const nlohmann::json run = nlohmann::json::parse(read_file(dir / "run.json"));
  const std::string command = run.value("command", "");
  if (command == "curve") plot_curve(dir, run, "curve.csv", false);
  else if (command == "simulate") plot_curve(dir, run, "sim.csv", true);
  // validate folders: the core's figures (hdat/core/validation_figures.hpp)
  else if (command == "analyze") plot_stability(dir);
}

}  // namespace hdat::specialization
