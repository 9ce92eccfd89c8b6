#pragma once
// The observables of the spec, per time, computed the same way from the reduced flow, the full flow
// and gradient descent (so curve.csv, sim.csv and validate read the same columns):
//   t, loss, z, entropy, top_gap, V_norm, s_i..., u_i..., a_i...
// then: top (index of the largest weight), one_minus_s_top (Σ_{j≠top} s_j), min_gap (smallest gap
// of the sorted logits), eps_log2t = (1 − s_top) log² t, z_minus_logt = z − log t, mean_a, a_norm2,
// normaliser (F = Σ f(a_j); softmax: log Σ e^{a_j}), top_col_norm = |V e_top|,
// max_other_col_norm = max_{j≠top} |V e_j|, and Q_i_j (i ≤ j) for the square loss.
#include <Eigen/Dense>
#include <string>
#include <vector>

#include "hdat/core/layout.hpp"
#include "hdat/core/model.hpp"
#include "hdat/core/table.hpp"
#include "hdat/polarization/model.hpp"

namespace hdat::polarization {

/// What a flow or a simulator measures at one time.
struct Measurement {
  Eigen::VectorXd logits;  ///< a (value model) or U a (tied)
  Eigen::VectorXd s;       ///< σ(logits)
  Eigen::VectorXd u;       ///< Vᵀ b (b = β*, Xᵀy or p*)
  double loss = 0, z = 0, V_norm = 0, normaliser = 0;
  double top_col_norm = 0, max_other_col_norm = 0;
  Eigen::MatrixXd Q;       ///< VᵀV (square loss, value model)
};

/// A measurement at time t and the quantities the spec derives from it, each computed here only
/// (observation() and the functions below): the columns of curve.csv and sim.csv and the claims read them.
struct Observation {
  double t = 0;
  Measurement m;
  int top = 0;                 ///< argmax s
  double one_minus_s_top = 0;  ///< the weight off the top token (the normalisation's own measure)
  double entropy = 0;          ///< of the weights (the normalisation's own definition)

  double s_top() const { return 1 - one_minus_s_top; }
  double log_t() const;         ///< log t; NaN at t = 0
  double eps_log2t() const;     ///< (1 − s_top) log² t, → 2b(T − 1)/T for the logistic softmax flow
  double z_minus_logt() const;  ///< z − log t, → log b
  double Q(int i, int j) const; ///< (VᵀV)_ij; NaN where the run does not measure Q
};

Observation observation(const Config& c, double t, Measurement m);

/// Does this configuration output Q_i_j columns?
bool has_Q_columns(const Config& c);

/// Every observable at one time, in the spec's column order: loss, z, entropy, top_gap, V_norm,
/// s_i, u_i, a_i (the logits), top, one_minus_s_top, min_gap, eps_log2t, z_minus_logt, mean_a,
/// a_norm2, normaliser, top_col_norm, max_other_col_norm, then Q_i_j (i ≤ j) for the square loss.
Observables all_observables(const Config& c, const Observation& o);
Observables all_observables(const Config& c, double t, Measurement m);

/// The same for a table that also lists a flow's state (the runs of the core's harness): the
/// observables that are columns of `layout` are left to its blocks, which take the place of the
/// first of them (so that u_i, a_i keep their place in the spec's order).
Observables besides_blocks(const Observables& all, const StateLayout& layout);

/// A table of all_observables: t, then every observable (the model's own analyses).
std::vector<std::string> observable_columns(const Config& c);
std::vector<double> observable_row(const Config& c, const Observation& o);
/// observable_columns, one row per observation (curve.csv and sim.csv of the model's own analyses).
Table observation_table(const Config& c, const std::vector<Observation>& run);

/// Smallest gap between consecutive sorted logits.
double min_consecutive_gap(const Eigen::VectorXd& a);
/// logits[top] − max_{j≠top} logits[j], top = argmax s.
double top_gap(const Eigen::VectorXd& logits, int top);

}  // namespace hdat::polarization
