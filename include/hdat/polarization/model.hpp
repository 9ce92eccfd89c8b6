#pragma once
// The `polarization` model (spec: ../shared/spec/polarization.md; derivation: derivation.md).
//
// Value-softmax model: T tokens, logits a ∈ R^T, weights s = σ(a), value matrix V ∈ R^{d×T},
// output β = V s; both V and a follow the gradient flow of a loss ℓ(β) (gradient descent with step
// η is the discrete counterpart, flow time t = η · steps). The tied variant is β = U σ(U a) with
// U ∈ R^{D×D}, D = d = T. One declaration (this file) serves the theory and the simulator: the keys,
// their defaults and the typed Config both read.
#include <Eigen/Dense>
#include <optional>
#include <string>
#include <vector>

#include "hdat/core/params.hpp"

namespace hdat::polarization {

enum class Loss { logistic, square, regression, xent };
enum class Normalization { softmax, square, sum, l1, relu, sigmoid, elementwise_relu };
enum class Architecture { value, tied };
enum class Init { random, explicit_values, numpy, numpy_target_first };
enum class FlowKind { reduced, full };

std::string name(Loss);
std::string name(Normalization);
std::string name(Architecture);
std::string name(Init);
std::string name(FlowKind);

/// Every configuration key of the model (name, default, range, meaning).
ParamSet parameters();

/// Cross-key consistency (lengths of u0/a0/Q0, tied needs d = T, ...). Throws InputError. (Keys set
/// where they do not apply are refused by their declared conditions, see parameters().)
void check(const Params& p);

/// The typed, resolved configuration. Built once from Params; theory and simulator read it.
struct Config {
  int T = 8;
  int d = 8;
  int n = 8;  ///< regression samples (rows of X)
  Loss loss = Loss::logistic;
  Normalization normalization = Normalization::softmax;
  Architecture architecture = Architecture::value;
  FlowKind flow = FlowKind::reduced;  ///< what `curve` integrates (auto resolved)
  Init init = Init::random;
  double V0_std = 0.1, a0_mean = 0.0, a0_std = 0.0, U0_scale = 1.0;
  unsigned long seed = 1;
  std::optional<Eigen::VectorXd> u0, a0;
  std::optional<Eigen::MatrixXd> Q0;
  std::optional<Eigen::VectorXd> p_star;
  double beta_norm = 1.0;  ///< |β*|
  double kappa = 1.0;
  double target_sharpness = 10.0;
  double lr = 0.1;
  double t_max = 1e6;
  std::vector<double> times;  ///< observation times (sorted, starting at 0)
  std::string stepper = "dopri5";
  double rtol = 1e-10, atol = 1e-12;
  bool log_time = true;
  /// ρ of da/dt = ρ (−∂L/∂a): +1, the chain rule; −1 with break_term=replicator_sign (the sign the
  /// paper is reported to print), which validate must reject.
  double replicator_sign = 1.0;
  int halvings = 2;
  double tolerance = 0.02;
  double min_order = 0.7;
  std::vector<double> drift_times;  ///< validate: times of the drift check
  bool figures = true;
  std::string claim = "polarization";

  /// |β*|² (b in derivation.md).
  double b() const { return beta_norm * beta_norm; }
  /// Is the closed (u, a) / (u, Q, a) reduction available for this configuration?
  bool reducible() const;

  static Config from(const Params& p);
};

/// Observation times from the keys t_points or (t_min, t_max, points): 0 then log-spaced.
std::vector<double> observation_times(const Params& p);

}  // namespace hdat::polarization
