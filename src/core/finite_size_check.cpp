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
  for (const char* c : {"extrapolated_diff", "extrapolated_se", "allowed", "pass"}) keys.emplace_back(c);
  return keys;
}
}  // namespace

InverseSizeCheck::InverseSizeCheck(std::vector<std::string> keys, std::vector<int> dims, InverseSizeCriterion criterion,
                                   DifferenceColumns difference)
    : keys_(std::move(keys)), dims_(std::move(dims)), criterion_(criterion), table_(columns(keys_, dims_, difference)) {}

bool InverseSizeCheck::add(const std::vector<Cell>& key_values, double theory, const std::vector<SizeMeasurement>& per_dim,
                           bool conditions_hold) {
  if (per_dim.size() != dims_.size()) throw std::invalid_argument("InverseSizeCheck::add: one measurement per dimension");
  std::vector<Cell> row = key_values;
  row.emplace_back(theory);
  std::vector<double> d, y, se;
  for (std::size_t k = 0; k < dims_.size(); ++k) {
    const SizeMeasurement& m = per_dim[k];
    d.push_back(dims_[k]);
    y.push_back(m.difference.mean);
    se.push_back(m.fit_se >= 0 ? m.fit_se : m.difference.se);
    for (double v : {m.simulation.mean, m.simulation.se, m.difference.mean, m.difference.se}) row.emplace_back(v);
  }
  const stats::InverseSizeFit fit = stats::extrapolate_inverse_size(d, y, se);
  const double allowed = criterion_.z * fit.a_se + criterion_.rel_floor * std::fabs(theory);
  const bool pass = std::fabs(fit.a) <= allowed && conditions_hold;
  ++checks_;
  if (!pass) ++failures_;
  const double ratio = std::fabs(fit.a) / std::max(allowed, 1e-300);
  if (ratio > worst_ratio_) {
    worst_ratio_ = ratio;
    nlohmann::json description = nlohmann::json::object();
    for (std::size_t k = 0; k < keys_.size() && k < key_values.size(); ++k)
      std::visit([&](const auto& v) { description[keys_[k]] = v; }, key_values[k]);
    description["theory"] = theory;
    description["extrapolated_diff"] = fit.a;
    description["extrapolated_se"] = fit.a_se;
    description["allowed"] = allowed;
    worst_ = std::move(description);
  }
  for (double v : {fit.a, fit.a_se, allowed, pass ? 1.0 : 0.0}) row.emplace_back(v);
  table_.add_row(std::move(row));
  return pass;
}

nlohmann::json InverseSizeCheck::verdict(const std::string& what) const {
  return {{"checks", checks_},
          {"failures", failures_},
          {"criterion", fmt::format("|a| <= {} * se(a) + {} * |theory|, where a is the d -> infinity intercept of a weighted "
                                    "fit a + b/d over dims of {}",
                                    criterion_.z, criterion_.rel_floor, what)},
          {"worst", worst_},
          {"worst_ratio", worst_ratio_}};
}

}  // namespace hdat
