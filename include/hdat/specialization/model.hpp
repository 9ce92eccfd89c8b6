#pragma once
// The `specialization` model: multi-head attention on the single-location model (spec:
// ../shared/spec/specialization.md). ONE declaration serves the theory (ode.hpp) and the simulator
// (validation/specialization): the same parameters, the same conventions (1/√D fields, t = steps/D,
// the ½ in the loss), the same attention code (attention.hpp).
#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hdat/core/gaussian.hpp"
#include "hdat/core/layout.hpp"
#include "hdat/core/params.hpp"
#include "hdat/core/random.hpp"
#include "hdat/core/schedule.hpp"
#include "hdat/specialization/attention.hpp"

namespace hdat {
struct StandardDefaults;  // harness.hpp
}

namespace hdat::specialization {

/// The prior P_θ of the spike amplitudes θ ∈ R^F.
struct Prior {
  enum class Kind { gaussian, discrete, signs } kind = Kind::gaussian;
  Eigen::VectorXd mean, std;      ///< gaussian: θ ~ N(mean, diag(std²))
  Eigen::MatrixXd points;         ///< discrete: K x F support points θ^k
  Eigen::VectorXd probs;          ///< discrete: p_k
  Eigen::VectorXd amplitudes;     ///< signs: θ_f = ± a_f independently

  int F() const;
  /// Var θ_f (for the predicted order of specialization).
  Eigen::VectorXd variance() const;
  Eigen::VectorXd mean_vector() const;

  /// One draw θ ~ P_θ from a random stream (the simulator's data and test sets).
  void sample(rng::Engine& engine, Eigen::VectorXd& theta) const;
  /// θ from F standard normals z (the theory's Gaussian sample sets; gaussian and signs priors):
  /// θ = mean + std z, or θ_f = ± a_f by the sign of z_f.
  void from_normals(const double* z, Eigen::VectorXd& theta) const;
};

/// Everything the theory and the simulator share, parsed once from Params.
struct Config {
  int D = 1000, L = 4, F = 2, H = 2;
  double eta = 0.5, noise = 0.1;  ///< learning rate η, label noise Δ
  int batch = 1;
  Activation activation = Activation::softmax;
  Aggregation aggregation = Aggregation::mean;
  /// b_h, the per-head offset of the logits (softmax1: against the fixed zero logit; bayes: log prior
  /// weights): fixed, or its initial value when trained.
  Eigen::VectorXd bias;
  bool train_bias = false;        ///< b trained by online SGD: then an order parameter (block b of the state)
  double eta_bias = 1.0;          ///< η_b: b_h ← b_h − (η_b/D) ∂loss/∂b_h, so that b moves on t = steps/D
  Prior prior;
  double init_std = 0.3;          ///< σ0
  std::uint64_t seed = 0;
  /// The schedule of eta (hdat optimize writes one); null: the constant eta.
  std::shared_ptr<const Schedule> schedule;

  /// η at time t (the schedule's value, or the constant).
  double eta_at(double t) const { return schedule ? schedule->value("eta", t, eta) : eta; }

  double kappa() const { return activation == Activation::bayes ? 1.0 : 0.0; }  ///< κ_h of the update
  /// The per-head offset of the logits, given the heads' squared norms R_hh = |k_h|²/D and the biases
  /// b (derivation.md §5): softmax1 b_h; bayes −R_hh/2 + b_h; softmax 0 (an offset of every logit of a
  /// head cancels in that head's normalisation).
  Eigen::VectorXd logit_offset(const Eigen::VectorXd& key_norms, const Eigen::VectorXd& b) const;
  Attention attention() const;
  /// M (H x F), R (H x H, symmetric), and b (H) when the bias is trained.
  StateLayout layout() const;
  /// The biases at state x: its block b when trained, otherwise the fixed `bias`.
  Eigen::VectorXd bias_in(const Eigen::VectorXd& x) const;
  /// The configuration the parameters ask for (once per command: the bound model keeps it).
  static Config from(const Params& p);
};

/// The model's parameters (spec "Parameters"), shared by curve, simulate, validate, analyze; the
/// harness's standard keys with this model's defaults (standard_defaults()).
const ParamSet& parameters();
StandardDefaults standard_defaults();
/// Cross-key checks (shapes of prior.*, M0, R0, bias ...); throws InputError naming the key.
void check(const Params& p);
Activation activation_from(const std::string& name);
std::string activation_name(Activation a);

/// Initial order parameters for the theory: M0/R0 when given; otherwise the overlaps of a random
/// initialisation k_h ~ N(0, σ0² I_D) drawn at dimension D from `seed`, with their O(1/√D)
/// fluctuations scaled by `asymmetry` (0: the exactly symmetric expected overlaps M = 0, R = σ0² I).
void initial_overlaps(const Params& p, const Config& s, Eigen::MatrixXd& M0, Eigen::MatrixXd& R0);

/// Pack (M, R) and, when the bias is trained, b (empty: s.bias) into a state vector of s.layout().
Eigen::VectorXd pack_state(const Config& s, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R,
                           const Eigen::VectorXd& b = Eigen::VectorXd());


}  // namespace hdat::specialization
