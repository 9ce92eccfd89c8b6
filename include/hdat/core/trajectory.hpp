#pragma once
// A trajectory, typed: at each observation time the state in its layout and the observables, each
// with its standard error where one exists. Of a single run (a theory's integration, one seed), an
// observable carries its own sampling error (a risk estimated on fresh samples) and the state none;
// of a mean over runs (seeds, theory replicas), every entry carries the standard error of that mean.
// The core passes these; a table is made only where a command writes its folder (table()) and read
// back only where a folder is read (a persisted seed: from_table()).
#include <Eigen/Dense>
#include <optional>
#include <string>
#include <vector>

#include "hdat/core/layout.hpp"
#include "hdat/core/observables.hpp"
#include "hdat/core/table.hpp"

namespace hdat {

class Trajectory {
 public:
  Trajectory() = default;
  /// An empty run shaped like `first` (the observables' names, which carry an error, where the
  /// blocks' columns go in its table) with states in `layout`.
  Trajectory(StateLayout layout, const Observables& first);

  /// The run's state and observables at time t. The state is kept as its table lists it (a
  /// symmetric block from its upper triangle), so that a run read back from its table is this one.
  void append(double t, const Observables& observed, const Eigen::VectorXd& x);

  std::size_t size() const { return t_.size(); }
  bool empty() const { return t_.empty(); }
  double t(std::size_t row) const { return t_[row]; }
  const std::vector<double>& times() const { return t_; }
  const StateLayout& layout() const { return layout_; }
  const Eigen::VectorXd& state(std::size_t row) const { return x_[row]; }
  /// True for a mean over runs (every entry has the mean's standard error).
  bool is_mean() const { return mean_; }

  /// The observables' names, in order.
  const std::vector<std::string>& observables() const { return names_; }
  /// The index of an observable; none when the trajectory has no such observable.
  std::optional<std::size_t> observable(const std::string& name) const;
  /// Observable `name` at a row (std::out_of_range naming it where the trajectory has none).
  Measured observed(std::size_t row, const std::string& name) const;
  /// The quantities compared and averaged: the observables, then the state's entries as the table
  /// lists them (layout().columns()).
  std::size_t quantities() const { return names_.size() + listed_.size(); }
  std::string quantity_name(std::size_t q) const;
  /// Quantity q at a row: its value and standard error (a run's state entry: 0).
  Measured quantity(std::size_t row, std::size_t q) const;
  /// The quantity index of the state's listed entry j (layout().columns()[j]).
  std::size_t entry_quantity(std::size_t j) const { return names_.size() + j; }

  /// The first `rows` rows.
  Trajectory head(std::size_t rows) const;
  /// Without the first `rows` rows.
  Trajectory drop_front(std::size_t rows) const;

  /// The folder's form. A run: t, the observables (an estimated one followed by name_se) with the
  /// blocks' columns where the run put them. A mean: t, then every column of a run's value (no
  /// per-run errors) followed by its standard error column.
  Table table() const;
  /// A run from its table (a persisted seed); none when the table lacks the layout's columns.
  static std::optional<Trajectory> from_table(const Table& table, const StateLayout& layout);

  /// The mean of runs with the same quantities, over their common rows (times from the first),
  /// with the standard error of the mean of every quantity (stats::mean_se).
  static Trajectory mean_of(const std::vector<Trajectory>& runs);

 private:
  StateLayout layout_;
  std::vector<std::string> names_;  ///< observables
  std::vector<bool> estimated_;     ///< per observable: a run's table gives it an error column
  std::size_t blocks_at_ = 0;       ///< the blocks' columns follow this many observables
  std::vector<int> listed_;         ///< flat state index of each listed entry (layout().columns())
  bool mean_ = false;
  std::vector<double> t_;
  std::vector<Eigen::VectorXd> x_;         ///< the state per row
  std::vector<Eigen::VectorXd> value_;     ///< per row: every quantity
  std::vector<Eigen::VectorXd> se_;        ///< per row: every quantity's standard error
};

}  // namespace hdat
