// Figures of an `hdat optimize` folder (hdat plot DIR): the optimal schedule beside the optimised
// usual ones, and the risk under each (risk_curves.csv), one panel per scheduled control.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/table.hpp"
#include "hdat/optimize/optimize.hpp"

namespace hdat::optimize {

namespace {
namespace fs = std::filesystem;

plot::Series column_series(const Table& t, const std::string& column, const std::string& label, int color, plot::Style style) {
  plot::Series s;
  s.label = label;
  s.color = color;
  s.style = style;
  s.x = t.numbers("t");
  s.y = t.numbers(column);
  return s;
}
}  // namespace

std::vector<std::string> plot_optimize(const std::string& folder) {
  const fs::path dir = folder;
  for (const char* f : {"run.json", "schedules.csv", "risk_curves.csv", "baselines.csv"})
    if (!fs::exists(dir / f)) throw InputError("DIR", fmt::format("{} is not an optimize folder: no {}", dir.string(), f));
  const nlohmann::json run = nlohmann::json::parse(read_file(dir / "run.json"));
  const nlohmann::json& info = run.at("optimize");
  const Table schedules = Table::read_csv_file((dir / "schedules.csv").string());
  const Table risks = Table::read_csv_file((dir / "risk_curves.csv").string());
  const Table summary = Table::read_csv_file((dir / "baselines.csv").string());
  std::vector<std::string> names;  // optimal first, then the baselines
  for (std::size_t r = 0; r < summary.rows(); ++r) names.push_back(summary.text(r, "schedule"));
  auto objective_of = [&](const std::string& name) {
    for (std::size_t r = 0; r < summary.rows(); ++r)
      if (summary.text(r, "schedule") == name) return summary.number(r, "objective");
    return 0.0;
  };
  const std::string risk = info.value("risk", "risk");
  plot::Figure fig;
  fig.title = fmt::format("{}: optimal protocol ({} objective, horizon {:g})", run.value("model", "?"), info.value("objective", "?"),
                          info.value("t_final", 0.0));
  fig.columns = 2;
  for (const auto& control : info["controls"]["scheduled"]) {
    plot::Panel p;
    p.title = control.get<std::string>() + " schedules";
    p.xlabel = "t";
    p.ylabel = control.get<std::string>();
    for (std::size_t k = 0; k < names.size(); ++k) {
      const std::string col = names[k] + "_" + control.get<std::string>();
      if (schedules.has_column(col))
        p.series.push_back(column_series(schedules, col, names[k], static_cast<int>(k), k == 0 ? plot::Style::lines : plot::Style::dashed));
    }
    fig.panels.push_back(p);
  }
  plot::Panel r;
  r.title = risk + " under each schedule";
  r.xlabel = "t";
  r.ylabel = risk;
  double lo = 1e300, hi = 0;  // a log axis only where the risk spans a decade
  for (const auto& name : names)
    if (risks.has_column(name))
      for (double v : risks.numbers(name))
        if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  r.logy = hi > 10 * lo;
  for (std::size_t k = 0; k < names.size(); ++k)
    if (risks.has_column(names[k]))
      r.series.push_back(column_series(risks, names[k], fmt::format("{} ({:.5g})", names[k], objective_of(names[k])), static_cast<int>(k),
                                       k == 0 ? plot::Style::lines : plot::Style::dashed));
  fig.panels.push_back(r);
  const fs::path stem = dir / "optimize";
  plot::render(fig, stem);
  return {(stem.string() + ".png")};
}

}  // namespace hdat::optimize
