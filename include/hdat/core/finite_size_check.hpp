#pragma once
// The finite-size check of a high-dimensional theory against runs at several dimensions d, in one
// place for every estimator compared with a fixed point or a state evolution (ERM, AMP ...):
//
//   at each compared point (a control value, an observable, maybe an iteration) the mean over seeds
//   of the difference simulation − theory, measured at each d, is fitted as a + b/d (weights 1/se²,
//   hdat::stats::extrapolate_inverse_size); the point agrees when
//       |a| ≤ z · se(a) + rel_floor · |theory|
//   and what else the model requires holds there (its theory converged, no run failed).
//
// The difference may be paired (each seed against the theory at its own realisation, which removes
// the realisation's fluctuations) or plain; the check does not care, the caller says which in words.
// Every point becomes a row of validate.csv; the verdict (checks, failures, the criterion, the worst
// point) goes to run.json and the exit code.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/statistics.hpp"
#include "hdat/core/table.hpp"

namespace hdat {

struct InverseSizeCriterion {
  double z = 3;          ///< allowed standard errors of the intercept
  double rel_floor = 0;  ///< plus this fraction of |theory| (the model error of a two-term fit)
};

/// One dimension's measurements at a compared point.
struct SizeMeasurement {
  stats::MeanSe simulation;  ///< the observable over seeds
  stats::MeanSe difference;  ///< simulation − theory over seeds
  /// The standard error the fit uses (< 0: difference.se), e.g. floored at the resolution of a
  /// quantised observable.
  double fit_se = -1;
};

/// The names of a point's difference columns in validate.csv (suffixed with each d).
struct DifferenceColumns {
  std::string mean = "diff", se = "diff_se";
};

class InverseSizeCheck {
 public:
  /// `keys`: the columns naming a point (alpha, observable ...); `dims` the sizes, in the order the
  /// measurements come.
  InverseSizeCheck(std::vector<std::string> keys, std::vector<int> dims, InverseSizeCriterion criterion,
                   DifferenceColumns difference = {});

  /// Check one point; returns whether it agrees. `key_values` match `keys` (they name the point in
  /// the verdict when it is the worst so far).
  bool add(const std::vector<Cell>& key_values, double theory, const std::vector<SizeMeasurement>& per_dim,
           bool conditions_hold = true);

  int checks() const { return checks_; }
  int failures() const { return failures_; }
  bool agree() const { return failures_ == 0; }
  const Table& table() const { return table_; }  ///< validate.csv
  /// checks, failures, the criterion in words (`what` says what the difference is and what else
  /// must hold), the worst point and its ratio |a| / allowed.
  nlohmann::json verdict(const std::string& what) const;

 private:
  std::vector<std::string> keys_;
  std::vector<int> dims_;
  InverseSizeCriterion criterion_;
  Table table_;
  int checks_ = 0, failures_ = 0;
  double worst_ratio_ = 0;
  nlohmann::json worst_ = nlohmann::json::object();
};

}  // namespace hdat
