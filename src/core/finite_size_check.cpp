#include "hdat/core/finite_size_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <variant>

namespace hdat {

namespace {
std::vector<std::string> columns(std::vector<std::string> keys, const std::vector<int>& dims, const DifferenceColumns& difference) {
  keys.emplace_back("theory");
  for (int d : dims)
    for (const std::string& c : {std::string("sim"), std::string("se"), difference.mean, difference.se})
      keys.push_back(fmt::format("{}_d{}", c, d));
  for (const char* c : {"extrapolated_diff", "extrapolated_se", "dof", "critical_value", "allowed", "pass"}) keys.emplace_back(c);
  return keys;
}

// The degrees of freedom of se(a) of the weighted fit a + b/d: a = Σ c_k y_k is a combination of
// seed means with n_k − 1 degrees of freedom each (Welch–Satterthwaite); where the fit's scatter
// inflated se(a) (stats::extrapolate_inverse_size), the scatter's own d − 2.
double intercept_dof(const std::vector<double>& d, const std::vector<double>& se, const std::vector<long>& n,
                     const stats::InverseSizeFit& fit, bool& from_scatter) {
  from_scatter = false;
  if (d.size() == 1) return static_cast<double>(n[0] - 1);
  double S = 0, Sx = 0, Sxx = 0;
  for (std::size_t k = 0; k < d.size(); ++k) {
    const double w = 1 / (se[k] * se[k]), x = 1 / d[k];
    S += w, Sx += w * x, Sxx += w * x * x;
  }
  const double det = S * Sxx - Sx * Sx;
  double variance = 0, fourth = 0;
  for (std::size_t k = 0; k < d.size(); ++k) {
    const double w = 1 / (se[k] * se[k]), c = w * (Sxx - Sx / d[k]) / det;
    const double v = c * c * se[k] * se[k];
    variance += v;
    fourth += n[k] > 1 ? v * v / static_cast<double>(n[k] - 1) : INFINITY;
  }
  const bool inflated = fit.a_se > std::sqrt(variance) * (1 + 1e-12);
  from_scatter = inflated;
  if (inflated) return static_cast<double>(d.size() - 2);
  return variance * variance / fourth;
}
}  // namespace

InverseSizeCheck::InverseSizeCheck(std::vector<std::string> keys, std::vector<int> dims, InverseSizeCriterion criterion,
                                   DifferenceColumns difference)
    : keys_(std::move(keys)), dims_(std::move(dims)), criterion_(criterion), columns_(columns(keys_, dims_, difference)) {}

void InverseSizeCheck::add(const std::vector<Cell>& key_values, double theory, const std::vector<SizeMeasurement>& per_dim,
                           bool conditions_hold) {
  if (per_dim.size() != dims_.size()) throw std::invalid_argument("InverseSizeCheck::add: one measurement per dimension");
  Point pt;
  pt.row = key_values;
  pt.row.emplace_back(theory);
  pt.theory = theory;
  pt.conditions = conditions_hold;
  std::vector<double> d, y, se;
  std::vector<long> n;
  for (std::size_t k = 0; k < dims_.size(); ++k) {
    const SizeMeasurement& m = per_dim[k];
    d.push_back(dims_[k]);
    y.push_back(m.difference.mean);
    se.push_back(m.fit_se >= 0 ? m.fit_se : m.difference.se);
    n.push_back(m.difference.n);
    for (double v : {m.simulation.mean, m.simulation.se, m.difference.mean, m.difference.se}) pt.row.emplace_back(v);
  }
  pt.fit = stats::extrapolate_inverse_size(d, y, se);
  pt.seeds = *std::min_element(n.begin(), n.end());
  const bool all_errors = std::all_of(se.begin(), se.end(), [](double s) { return s > 0; });
  pt.dof = all_errors ? intercept_dof(d, se, n, pt.fit, pt.dof_from_sizes) : pt.seeds - 1.0;
  points_.push_back(std::move(pt));
}

// The points as a family of tests: the scale of a point is the largest |theory| of its observable
// (the key "observable" where there is one, else of every point).
FamilyTest InverseSizeCheck::family() const {
  FamilyCriterion c;
  c.false_alarm = criterion_.false_alarm;
  c.detectable = criterion_.detectable;
  c.seeds_key = "seeds";
  const auto observable_at = std::find(keys_.begin(), keys_.end(), "observable") - keys_.begin();
  const auto group = [&](const Point& pt) {
    return static_cast<std::size_t>(observable_at) < keys_.size() ? pt.row[observable_at] : Cell(std::string());
  };
  FamilyTest family(c);
  for (const Point& pt : points_) {
    double scale = 0;
    for (const Point& other : points_)
      if (group(other) == group(pt)) scale = std::max(scale, std::fabs(other.theory));
    ComparedEntry e;
    e.deviation = pt.fit.a;
    e.se_seeds = pt.fit.a_se;
    e.seeds = pt.seeds;
    e.dof_seeds = pt.dof;
    if (pt.dof_from_sizes) e.dof_key = "dims";
    e.allowance = criterion_.rel_floor * std::fabs(pt.theory);
    e.scale = scale;
    e.block = std::visit([](const auto& v) { return fmt::format("{}", v); }, group(pt));
    for (std::size_t k = 0; k < keys_.size() && k < pt.row.size(); ++k)
      std::visit([&](const auto& v) { e.where[keys_[k]] = v; }, pt.row[k]);
    family.add(std::move(e));
  }
  return family;
}

int InverseSizeCheck::failures() const {
  const FamilyTest f = family();
  const long tests = f.tests();
  int failed = 0;
  for (std::size_t k = 0; k < points_.size(); ++k) failed += judge(f.entry(k), f.criterion(), tests).agree && points_[k].conditions ? 0 : 1;
  return failed;
}

Verdict InverseSizeCheck::result() const {
  Verdict v = family().verdict();
  long unmet = 0;
  for (const Point& pt : points_) unmet += pt.conditions ? 0 : 1;
  if (unmet) v.merge(Verdict::disagree(fmt::format("{} of {} points fail the model's conditions (theory converged, no failed run)", unmet,
                                                   points_.size())));
  return v;
}

Table InverseSizeCheck::table() const {
  const FamilyTest f = family();
  const long tests = f.tests();
  Table t(columns_);
  for (std::size_t k = 0; k < points_.size(); ++k) {
    const Point& pt = points_[k];
    const Judgement j = judge(f.entry(k), f.criterion(), tests);
    std::vector<Cell> row = pt.row;
    for (double v : {pt.fit.a, pt.fit.a_se, pt.dof, j.critical, j.allowed, j.agree && pt.conditions ? 1.0 : 0.0}) row.emplace_back(v);
    t.add_row(std::move(row));
  }
  return t;
}

nlohmann::json InverseSizeCheck::verdict(const std::string& what) const {
  const FamilyTest f = family();
  const Verdict v = result();
  nlohmann::json out = {{"verdict", v.name()},
                        {"reasons", v.reasons},
                        {"checks", checks()},
                        {"failures", failures()},
                        {"criterion", fmt::format("{} of {}; a is the d -> infinity intercept of a weighted fit a + b/d over dims, nu the "
                                                  "fit's degrees of freedom",
                                                  f.criterion().text(fmt::format("{:g} * |theory|", criterion_.rel_floor)), what)}};
  const nlohmann::json tests_record = f.record();  // kept: items() refers to it
  for (const auto& [key, value] : tests_record.items()) out[key] = value;
  out["worst_ratio"] = out.contains("worst") ? out["worst"]["deviation_over_allowed"] : nlohmann::json(0.0);
  return out;
}

}  // namespace hdat
