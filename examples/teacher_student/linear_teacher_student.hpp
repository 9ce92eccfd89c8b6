#pragma once
// A dynamics model of your own, declared against hdat's contract (hdat/core/model.hpp) outside hdat's
// tree: online SGD of a linear student learning a linear teacher with K outputs, and its order-parameter
// ODE in the limit of input dimension N -> infinity. Registered as `teacher-student`, it gets curve,
// simulate, validate (trajectories and drift), sweep and plot from hdat's harness.
//
// Teacher y = W* x / sqrt(N) (+ label noise sigma xi), student y^ = W x / sqrt(N), x ~ N(0, I_N), loss
// |y - y^|^2 / 2, one step W += (eta / sqrt(N)) (y - y^) x^T per sample; time t = steps / N. With
//   R = W W*^T / N (student-teacher overlaps, K x K),  Q = W W^T / N (K x K, symmetric),
//   T = W* W*^T / N (given, fixed),
// the drift of one step, averaged over x and in the limit N -> infinity, is the sum of two terms:
//   "eta"   dR/dt = eta (T - R),   dQ/dt = eta (R + R^T - 2 Q)            (the gradient)
//   "eta2"  dR/dt = 0,             dQ/dt = eta^2 (T - R - R^T + Q + sigma^2 I)   (the SGD noise)
// and the generalisation error is eps = tr(T - R - R^T + Q) / 2. Without noise the error matrix
// E = T - R - R^T + Q obeys dE/dt = -eta (2 - eta) E: in closed form
//   R(t) = T - (T - R0) exp(-eta t),   E(t) = E0 exp(-eta (2 - eta) t)      (closed_form below).
#include <Eigen/Dense>

#include "hdat/core/model.hpp"
#include "hdat/core/registry.hpp"

namespace teacher_student {

/// The parameters parsed once.
struct Config {
  Eigen::MatrixXd T;  ///< teacher overlaps (K x K, symmetric positive definite)
  double eta = 0.5;
  double noise = 0;     ///< label noise sigma
  double init_std = 0.5;  ///< student weights ~ N(0, init_std^2)
  int N = 1000;
  std::uint64_t seed = 0;
  std::string broken_term = "none";  ///< testing only: a term left out of the theory
  int K() const { return static_cast<int>(T.rows()); }
  /// Blocks R (K x K) and Q (K x K, symmetric).
  hdat::StateLayout layout() const;
  static Config from(const hdat::Params& p);
};

/// The exact solution without noise from (R0, Q0) at time t, as a state of Config::layout().
Eigen::VectorXd closed_form(const Config& c, const Eigen::VectorXd& x0, double t);

/// The model's registry entry: its parameters (its own and hdat's standard keys), its check, and the
/// commands hdat's harness derives from its Dynamics.
hdat::ModelEntry entry();

}  // namespace teacher_student
