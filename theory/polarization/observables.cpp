#include "hdat/polarization/observables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hdat/polarization/normalization.hpp"

namespace hdat::polarization {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

bool has_Q_columns(const Config& c) { return c.loss == Loss::square && c.architecture == Architecture::value; }

std::vector<std::string> observable_columns(const Config& c) {
  std::vector<std::string> cols = {"t", "loss", "z", "entropy", "top_gap", "V_norm"};
  for (int i = 0; i < c.T; ++i) cols.push_back(fmt::format("s_{}", i));
  for (int i = 0; i < c.T; ++i) cols.push_back(fmt::format("u_{}", i));
  for (int i = 0; i < c.T; ++i) cols.push_back(fmt::format("a_{}", i));
  for (const char* k : {"top", "one_minus_s_top", "min_gap", "eps_log2t", "z_minus_logt", "mean_a", "a_norm2", "normaliser",
                        "top_col_norm", "max_other_col_norm"})
    cols.push_back(k);
  if (has_Q_columns(c))
    for (int i = 0; i < c.T; ++i)
      for (int j = i; j < c.T; ++j) cols.push_back(fmt::format("Q_{}_{}", i, j));
  return cols;
}

double min_consecutive_gap(const Eigen::VectorXd& a) {
  std::vector<double> v(a.data(), a.data() + a.size());
  std::sort(v.begin(), v.end());
  double g = std::numeric_limits<double>::infinity();
  for (std::size_t i = 1; i < v.size(); ++i) g = std::min(g, v[i] - v[i - 1]);
  return v.size() > 1 ? g : kNaN;
}

double top_gap(const Eigen::VectorXd& logits, int top) {
  double second = -std::numeric_limits<double>::infinity();
  for (Eigen::Index j = 0; j < logits.size(); ++j)
    if (j != top) second = std::max(second, logits(j));
  return logits.size() > 1 ? logits(top) - second : kNaN;
}

std::vector<double> observable_row(const Config& c, double t, const Measured& m) {
  const int top = top_index(m.s);
  const double eps = one_minus_top(c.normalization, m.s, top);
  const double logt = t > 0 ? std::log(t) : kNaN;
  std::vector<double> row = {t, m.loss, m.z, entropy(c.normalization, m.logits, m.s), top_gap(m.logits, top), m.V_norm};
  for (int i = 0; i < c.T; ++i) row.push_back(m.s(i));
  for (int i = 0; i < c.T; ++i) row.push_back(m.u(i));
  for (int i = 0; i < c.T; ++i) row.push_back(m.logits(i));
  row.push_back(top);
  row.push_back(eps);
  row.push_back(min_consecutive_gap(m.logits));
  row.push_back(eps * logt * logt);
  row.push_back(m.z - logt);
  row.push_back(m.logits.mean());
  row.push_back(m.logits.squaredNorm());
  row.push_back(m.normaliser);
  row.push_back(m.top_col_norm);
  row.push_back(m.max_other_col_norm);
  if (has_Q_columns(c))
    for (int i = 0; i < c.T; ++i)
      for (int j = i; j < c.T; ++j) row.push_back(m.Q.size() ? m.Q(i, j) : kNaN);
  return row;
}

}  // namespace hdat::polarization
