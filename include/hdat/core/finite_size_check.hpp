#pragma once
// The finite-size check of a high-dimensional theory against runs at several dimensions d, in one
// place for every estimator compared with a fixed point or a state evolution (ERM, AMP ...):
//
//   at each compared point (a control value, an observable, maybe an iteration) the mean over seeds
//   of the difference simulation − theory, measured at each d, is fitted as a + b/d (weights 1/se²,
//   hdat::stats::extrapolate_inverse_size); the point agrees when
//       |a| ≤ c · se(a) + rel_floor · |theory|
//   and what else the model requires holds there (its theory converged, no run failed). c is the
//   Student-t critical value of verdict.hpp: ν the fit's degrees of freedom (Welch–Satterthwaite over
//   the seed means at each d, n − 1 each; the fit's own d − 2 when its scatter inflates se(a)), the
//   family-wise false-alarm rate `false_alarm` shared by Bonferroni over every compared point.
//   UNDECIDED where c · se(a) > detectable · scale, scale the largest |theory| of that observable.
//
// The difference may be paired (each seed against the theory at its own realisation, which removes
// the realisation's fluctuations) or plain; the check does not care, the caller says which in words.
// Every point becomes a row of validate.csv; the verdict (checks, failures, the criterion, the worst
// point) goes to run.json and the exit code. Points are judged once all are in (their number sets
// the critical value).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/statistics.hpp"
#include "hdat/core/table.hpp"
#include "hdat/core/verdict.hpp"

namespace hdat {

struct InverseSizeCriterion {
  double false_alarm = 0.01;  ///< family-wise, over every compared point (verdict.hpp)
  double detectable = 0.1;    ///< UNDECIDED where c · se(a) exceeds this fraction of the observable's scale
  double rel_floor = 0;       ///< plus this fraction of |theory| (the model error of a two-term fit)
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

  /// Add one point. `key_values` match `keys` (they name the point in the verdict); one
  /// measurement per d. `conditions_hold` false: the point fails whatever its numbers.
  void add(const std::vector<Cell>& key_values, double theory, const std::vector<SizeMeasurement>& per_dim,
           bool conditions_hold = true);

  int checks() const { return static_cast<int>(points_.size()); }
  int failures() const;  ///< points outside, or whose conditions fail
  /// agree, disagree (some point fails) or undecided (none does, but some is not resolved).
  Verdict result() const;
  bool agree() const { return result().kind == VerdictKind::agree; }
  Table table() const;  ///< validate.csv
  /// checks, failures, the criterion in words (`what` says what the difference is and what else
  /// must hold), the worst point and its ratio |a| / allowed, and FamilyTest::record()'s fields.
  nlohmann::json verdict(const std::string& what) const;

 private:
  struct Point {
    std::vector<Cell> row;  // keys, theory, then per d: sim, se, diff, diff_se
    double theory = 0;
    stats::InverseSizeFit fit;
    double dof = 0;  // of se(a)
    bool dof_from_sizes = false;  // the fit's scatter over the sizes set them (more seeds cannot raise them)
    long seeds = 0;
    bool conditions = true;
  };
  FamilyTest family() const;
  std::vector<std::string> keys_;
  std::vector<int> dims_;
  InverseSizeCriterion criterion_;
  std::vector<std::string> columns_;
  std::vector<Point> points_;
};

}  // namespace hdat
