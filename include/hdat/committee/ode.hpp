#pragma once
// The N → ∞ order-parameter ODE of the soft committee machine (Saad–Solla 1995; derivation.md §2):
//
//   dR_in/dt = η v_i Σ_c s_c I3(i, n*, c) − wd R_in
//   dQ_ik/dt = η v_i Σ_c s_c I3(i, k, c) + η v_k Σ_c s_c I3(k, i, c) − 2 wd Q_ik
//              + η² v_i v_k [ Σ_cd s_c s_d I4(i, k, c, d) + σ² J2(i, k) ]
//   dv_i/dt  = η_v Σ_c s_c I2(i, c)                                   (train_v)
//   dT/dt    = 0
//
// With dropout (keep-probability r) every product of students' terms carries the moment
// E[μ_i μ_k μ_c μ_d] = r^(distinct students among them) (derivation.md §9); η and r follow the
// schedule at time t when one is given.
//
// with s = (−v, v*) over the L = K + M fields (students, then teachers) and the closed forms of
// integrals.hpp. Evaluated in bulk (derivation.md §4): the η-linear part is one K×L by L×L product;
// the η² part is, for each pair (i ≤ k), the tilted covariance C' and L(L+1)/2 arcsines, the pairs
// in parallel (OpenMP, each pair written by one thread: results independent of the thread count).
// No allocation per call after the first on a thread.
#include <Eigen/Dense>

#include "hdat/committee/model.hpp"
#include "hdat/core/model.hpp"

namespace hdat::committee {

/// Where the blocks start in the flat state (looked up once, not per right-hand-side call).
struct BlockOffsets {
  int Q = 0, R = 0, T = 0, v = -1;
};

class CommitteeODE final : public OdeTheory {
 public:
  /// threads <= 0: OpenMP's default; small systems run on one thread whatever the setting.
  explicit CommitteeODE(const Config& setup, int threads = 0);

  const StateLayout& layout() const override { return layout_; }
  void operator()(const ConstVecRef& x, VecRef dxdt, double t) const override;
  /// The drift in its named terms (Config::active_terms()), exact (no standard errors).
  DriftTerms terms(const Eigen::VectorXd& x, double t) const override;
  /// "eg": the generalisation error of the state (exact).
  Observables observe(const Eigen::VectorXd& x, double t) const override;

  double generalisation_error(const Eigen::VectorXd& x) const;
  const Config& setup() const { return setup_; }

  /// The drift's parts at a state, each a full state vector (zero outside its blocks).
  struct Parts {
    Eigen::VectorXd eta_linear, eta_squared, label_noise, weight_decay, second_layer;
  };
  /// At time t (the schedule's η and keep-probability; the constants when there is none).
  void parts(const ConstVecRef& x, Parts& out, double t = 0) const;

 private:
  Config setup_;
  StateLayout layout_;
  BlockOffsets offsets_;
  int threads_;
  double keep_[5];  ///< 1 for every term, 0 for the broken one (testing only), in term_names() order
};

}  // namespace hdat::committee
