#include "hdat/polarization/observables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "hdat/polarization/normalization.hpp"
#include "hdat/core/constants.hpp"

namespace hdat::polarization {

bool has_Q_columns(const Config& c) { return c.loss == Loss::square && c.architecture == Architecture::value; }

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

Observation observation(const Config& c, double t, Measurement m) {
  Observation o;
  o.t = t;
  o.top = top_index(m.s);
  o.one_minus_s_top = one_minus_top(c.normalization, m.s, o.top);
  o.entropy = entropy(c.normalization, m.logits, m.s);
  o.m = std::move(m);
  return o;
}

double Observation::log_t() const { return t > 0 ? std::log(t) : kNaN; }
double Observation::eps_log2t() const { return one_minus_s_top * log_t() * log_t(); }
double Observation::z_minus_logt() const { return m.z - log_t(); }
double Observation::Q(int i, int j) const { return m.Q.size() ? m.Q(i, j) : kNaN; }

Observables all_observables(const Config& c, const Observation& o) {
  const Measurement& m = o.m;
  Observables out;
  out.add("loss", m.loss).add("z", m.z).add("entropy", o.entropy).add("top_gap", top_gap(m.logits, o.top));
  out.add("V_norm", m.V_norm);
  for (int i = 0; i < c.T; ++i) out.add(fmt::format("s_{}", i), m.s(i));
  for (int i = 0; i < c.T; ++i) out.add(fmt::format("u_{}", i), m.u(i));
  for (int i = 0; i < c.T; ++i) out.add(fmt::format("a_{}", i), m.logits(i));
  out.add("top", o.top).add("one_minus_s_top", o.one_minus_s_top).add("min_gap", min_consecutive_gap(m.logits));
  out.add("eps_log2t", o.eps_log2t()).add("z_minus_logt", o.z_minus_logt());
  out.add("mean_a", m.logits.mean()).add("a_norm2", m.logits.squaredNorm()).add("normaliser", m.normaliser);
  out.add("top_col_norm", m.top_col_norm).add("max_other_col_norm", m.max_other_col_norm);
  if (has_Q_columns(c))
    for (int i = 0; i < c.T; ++i)
      for (int j = i; j < c.T; ++j) out.add(fmt::format("Q_{}_{}", i, j), o.Q(i, j));
  return out;
}

Observables all_observables(const Config& c, double t, Measurement m) { return all_observables(c, observation(c, t, std::move(m))); }

Observables besides_blocks(const Observables& all, const StateLayout& layout) {
  const std::vector<std::string> columns = layout.columns();
  Observables out;
  bool placed = false;
  for (std::size_t k = 0; k < all.size(); ++k) {
    const std::string& name = all.names()[k];
    if (std::find(columns.begin(), columns.end(), name) != columns.end()) {
      if (!placed) out.blocks_here();
      placed = true;
      continue;
    }
    if (all.estimated(k)) out.add(name, all.at(k).value, all.at(k).se);
    else out.add(name, all.at(k).value);
  }
  return out;
}

std::vector<std::string> observable_columns(const Config& c) {
  Measurement m;
  m.s = m.u = m.logits = Eigen::VectorXd::Zero(c.T);
  const Observables o = all_observables(c, 1.0, m);
  std::vector<std::string> cols = {"t"};
  cols.insert(cols.end(), o.names().begin(), o.names().end());
  return cols;
}

std::vector<double> observable_row(const Config& c, const Observation& o) {
  const Observables all = all_observables(c, o);
  std::vector<double> row = {o.t};
  for (std::size_t k = 0; k < all.size(); ++k) row.push_back(all.at(k).value);
  return row;
}

Table observation_table(const Config& c, const std::vector<Observation>& run) {
  Table table(observable_columns(c));
  for (const Observation& o : run) table.add_row(observable_row(c, o));
  return table;
}

}  // namespace hdat::polarization
