// Typed trajectories (trajectory.hpp) and their tables.
#include "hdat/core/trajectory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "hdat/core/statistics.hpp"

namespace hdat {

Trajectory::Trajectory(StateLayout layout, const Observables& first)
    : layout_(std::move(layout)), names_(first.names()), blocks_at_(first.blocks_at()), listed_(layout_.listed()) {
  for (std::size_t k = 0; k < first.size(); ++k) estimated_.push_back(first.estimated(k));
}

void Trajectory::append(double t, const Observables& observed, const Eigen::VectorXd& x) {
  if (observed.names() != names_)
    throw std::logic_error(fmt::format("a run's observables changed at t = {:g} (a model must report the same ones at every time)", t));
  if (x.size() != layout_.size())
    throw std::logic_error(fmt::format("a state of {} entries at t = {:g} in a layout of {}", x.size(), t, layout_.size()));
  const Eigen::Index n = static_cast<Eigen::Index>(names_.size());
  Eigen::VectorXd value(n + static_cast<Eigen::Index>(listed_.size())), se = Eigen::VectorXd::Zero(value.size());
  for (Eigen::Index k = 0; k < n; ++k) value(k) = observed.at(static_cast<std::size_t>(k)).value, se(k) = observed.at(static_cast<std::size_t>(k)).se;
  for (std::size_t j = 0; j < listed_.size(); ++j) value(n + static_cast<Eigen::Index>(j)) = x(listed_[j]);
  t_.push_back(t);
  x_.push_back(layout_.from_values(layout_.values(x)));
  value_.push_back(std::move(value));
  se_.push_back(std::move(se));
}

std::optional<std::size_t> Trajectory::observable(const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) return std::nullopt;
  return static_cast<std::size_t>(it - names_.begin());
}

std::string Trajectory::quantity_name(std::size_t q) const {
  if (q < names_.size()) return names_[q];
  return layout_.columns().at(q - names_.size());
}

Measured Trajectory::observed(std::size_t row, const std::string& name) const {
  const auto k = observable(name);
  if (!k) throw std::out_of_range("Trajectory: no observable '" + name + "'");
  return quantity(row, *k);
}

Measured Trajectory::quantity(std::size_t row, std::size_t q) const {
  const auto i = static_cast<Eigen::Index>(q);
  return {value_[row](i), se_[row](i)};
}

Trajectory Trajectory::head(std::size_t rows) const {
  Trajectory out = *this;
  rows = std::min(rows, size());
  out.t_.resize(rows), out.x_.resize(rows), out.value_.resize(rows), out.se_.resize(rows);
  return out;
}

Trajectory Trajectory::drop_front(std::size_t rows) const {
  Trajectory out = *this;
  rows = std::min(rows, size());
  const auto from = [rows](auto& v) { v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rows)); };
  from(out.t_), from(out.x_), from(out.value_), from(out.se_);
  return out;
}

Table Trajectory::table() const {
  const std::vector<std::string> entries = layout_.columns();
  // The columns in a run's order, each a quantity; a run's estimated observables and every entry of
  // a mean get an error column.
  std::vector<std::string> columns = {"t"};
  std::vector<std::pair<std::size_t, bool>> cells;  // (quantity, its error rather than its value)
  const auto add = [&](std::size_t q, const std::string& name, bool with_error) {
    columns.push_back(name), cells.emplace_back(q, false);
    if (with_error) columns.push_back(name + "_se"), cells.emplace_back(q, true);
  };
  for (std::size_t k = 0; k <= names_.size(); ++k) {
    if (k == blocks_at_)
      for (std::size_t j = 0; j < entries.size(); ++j) add(entry_quantity(j), entries[j], mean_);
    if (k == names_.size()) break;
    add(k, names_[k], mean_ || estimated_[k]);
  }
  Table out(columns);
  for (std::size_t r = 0; r < size(); ++r) {
    std::vector<double> row = {t_[r]};
    for (const auto& [q, error] : cells) row.push_back(error ? se_[r](static_cast<Eigen::Index>(q)) : value_[r](static_cast<Eigen::Index>(q)));
    out.add_row(row);
  }
  return out;
}

std::optional<Trajectory> Trajectory::from_table(const Table& table, const StateLayout& layout) {
  const std::vector<std::string> entries = layout.columns();
  if (!table.has_column("t")) return std::nullopt;
  for (const auto& c : entries)
    if (!table.has_column(c)) return std::nullopt;
  const auto is_entry = [&](const std::string& c) { return std::find(entries.begin(), entries.end(), c) != entries.end(); };
  const auto is_error = [&](const std::string& c) {
    return c.size() > 3 && c.compare(c.size() - 3, 3, "_se") == 0 && table.has_column(c.substr(0, c.size() - 3));
  };
  std::vector<std::string> observables;
  std::size_t blocks_at = std::string::npos;
  for (const auto& c : table.columns()) {
    if (c == "t" || is_error(c)) continue;
    if (is_entry(c)) {
      if (blocks_at == std::string::npos) blocks_at = observables.size();
      continue;
    }
    observables.push_back(c);
  }
  Trajectory out;
  for (std::size_t r = 0; r < table.rows(); ++r) {
    Observables o;
    for (std::size_t k = 0; k < observables.size(); ++k) {
      if (k == blocks_at) o.blocks_here();
      const std::string& name = observables[k];
      if (table.has_column(name + "_se")) o.add(name, table.number(r, name), table.number(r, name + "_se"));
      else o.add(name, table.number(r, name));
    }
    std::vector<double> values;
    for (const auto& c : entries) values.push_back(table.number(r, c));
    if (r == 0) out = Trajectory(layout, o);
    out.append(table.number(r, "t"), o, layout.from_values(values));
  }
  if (table.rows() == 0) out.layout_ = layout, out.listed_ = layout.listed();
  return out;
}

Trajectory Trajectory::mean_of(const std::vector<Trajectory>& runs) {
  Trajectory out;
  out.mean_ = true;
  if (runs.empty()) return out;
  const Trajectory& first = runs.front();
  out.layout_ = first.layout_, out.names_ = first.names_, out.estimated_ = first.estimated_;
  out.blocks_at_ = first.blocks_at_, out.listed_ = first.listed_;
  std::size_t rows = first.size();
  for (const Trajectory& r : runs) {
    if (r.names_ != first.names_ || r.listed_.size() != first.listed_.size())
      throw std::logic_error("Trajectory::mean_of: the runs report different quantities");
    rows = std::min(rows, r.size());
  }
  const Eigen::Index n = static_cast<Eigen::Index>(first.quantities());
  for (std::size_t row = 0; row < rows; ++row) {
    Eigen::VectorXd value(n), se(n), x = Eigen::VectorXd::Zero(first.layout_.size());
    std::vector<double> per_run(runs.size());
    for (Eigen::Index q = 0; q < n; ++q) {
      for (std::size_t k = 0; k < runs.size(); ++k) per_run[k] = runs[k].value_[row](q);
      const stats::MeanSe m = stats::mean_se(per_run);
      value(q) = m.mean, se(q) = m.se;
    }
    for (const Trajectory& r : runs) x += r.x_[row];
    out.t_.push_back(first.t_[row]);
    out.x_.push_back(x / static_cast<double>(runs.size()));
    out.value_.push_back(std::move(value));
    out.se_.push_back(std::move(se));
  }
  return out;
}

}  // namespace hdat
