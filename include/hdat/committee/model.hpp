#pragma once
// The `committee` model: the soft committee machine of Saad and Solla under online SGD (spec:
// ../shared/spec/committee.md; equations: theory/committee/derivation.md). ONE declaration serves
// the theory (ode.hpp) and the simulator (simulator.hpp): the same parameters and the same
// conventions (fields λ = w·x/√N, t = steps/N, the ½ in the loss, g(u) = erf(u/√2)).
//
// Teacher y = Σ_m v*_m g(ν_m) + σζ, student ŷ = Σ_k v_k g(λ_k), Δ = y − ŷ; first layer
// w_k ← (1 − wd/N) w_k + (η/√N) v_k g'(λ_k) Δ x, second layer (train_v) v_k ← v_k + (η_v/N) g(λ_k) Δ.
#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hdat/core/layout.hpp"
#include "hdat/core/params.hpp"
#include "hdat/core/schedule.hpp"

namespace hdat::committee {

enum class Activation { erf, linear };  ///< g(u) = erf(u/√2) | g(u) = u
enum class TeacherKind { orthonormal, gaussian };

Activation activation_from(const std::string& name);  ///< InputError naming `activation`
std::string activation_name(Activation a);

/// The names of the drift's terms (derivation.md §2), as the theory's terms() and the simulator's
/// increment() return them and as `break_term` names them:
///   eta_linear    the part linear in η (first layer: dR, dQ);
///   eta_squared   the η² part of dQ from the teacher-student error (SGD noise);
///   label_noise   the η² σ² J2 part of dQ (label noise);
///   weight_decay  −wd R, −2 wd Q;
///   second_layer  dv (train_v).
inline const std::vector<std::string>& term_names() {
  static const std::vector<std::string> names = {"eta_linear", "eta_squared", "label_noise", "weight_decay", "second_layer"};
  return names;
}

/// Everything the theory and the simulator share, parsed once from the parameters.
struct Config {
  int N = 500;  ///< input dimension (simulator)
  int K = 2;    ///< student hidden units
  int M = 2;    ///< teacher hidden units
  Activation activation = Activation::erf;
  double eta = 0.5;    ///< first-layer learning rate η
  double eta_v = 0.5;  ///< second-layer learning rate η_v
  bool train_v = false;
  double noise = 0.0;  ///< label noise σ
  double wd = 0.0;     ///< weight decay of the first layer
  Eigen::VectorXd vstar;  ///< teacher second layer v* (M)
  Eigen::VectorXd v0;     ///< student second layer v at t = 0 (K); constant unless train_v
  TeacherKind teacher = TeacherKind::orthonormal;
  double init_std = 1.0;  ///< w_k ~ N(0, init_std² I_N)
  std::uint64_t seed = 0;
  /// Testing only: one of term_names() is dropped from the theory ("none": the correct theory).
  std::string broken_term = "none";
  /// Dropout (Mignacco and Mori's setting; derivation.md §9): during training each student unit is
  /// kept independently with probability r at every step (a dropped unit neither contributes
  /// v_k g(λ_k) to the output nor receives a gradient); r = 1: no dropout.
  double dropout_keep = 1.0;
  /// p_f: at test time the student's output is multiplied by p_f (the observables eg and eg_test).
  double test_scale = 1.0;
  /// The schedules of eta and dropout_keep, and the final test_scale (hdat optimize writes them);
  /// null: the constants above.
  std::shared_ptr<const Schedule> schedule;

  /// η and r at time t (the schedule's values, or the constants).
  double eta_at(double t) const { return schedule ? schedule->value("eta", t, eta) : eta; }
  double keep_at(double t) const { return schedule ? schedule->value("dropout_keep", t, dropout_keep) : dropout_keep; }
  /// Whether any control varies in time.
  bool scheduled() const { return schedule && !schedule->controls.empty(); }

  /// Defaults of the spec (vstar = ones(M), v0 = ones(K)) for the given sizes.
  static Config defaults(int K, int M);
  int fields() const { return K + M; }  ///< L = K + M jointly Gaussian fields (λ, ν)
  /// Blocks Q (K×K symmetric), R (K×M), T (M×M symmetric, constant), v (K, only when train_v).
  StateLayout layout() const;
  /// The terms present in this configuration (label_noise when σ > 0, weight_decay when wd > 0,
  /// second_layer when train_v), in the order of term_names().
  std::vector<std::string> active_terms() const;
  /// Throws std::invalid_argument when sizes or vectors do not fit together.
  void validate() const;
  /// The configuration the parameters ask for (once per command: the bound model keeps it).
  static Config from(const Params& p);
};

/// The order parameters as matrices, and the flat state vector of Config::layout().
struct Overlaps {
  Eigen::MatrixXd Q, R, T;
  Eigen::VectorXd v;  ///< the student's second layer (the constant v0 when it is not trained)
};
Eigen::VectorXd pack(const Config& s, const Overlaps& o);
/// The overlaps of a state; v is read from the state when trained, else it is s.v0.
Overlaps unpack(const Config& s, const Eigen::VectorXd& x);

/// The covariance C = [[Q, R], [Rᵀ, T]] of the fields (λ, ν) (L×L), written into `C`.
void field_covariance(const Eigen::MatrixXd& Q, const Eigen::MatrixXd& R, const Eigen::MatrixXd& T, Eigen::MatrixXd& C);
/// The signed readout weights s = (−v, v*) (L): Δ = σζ + Σ_c s_c g(u_c).
Eigen::VectorXd readout_signs(const Eigen::VectorXd& v, const Eigen::VectorXd& vstar);
/// E[μ_a μ_b μ_c μ_d] of the dropout masks over the students among the indices (a field index
/// c < K is a student, ≥ K a teacher, −1 none): r to the number of DISTINCT students (μ² = μ).
template <class S>
S mask_moment(const S& r, int K, int a, int b, int c = -1, int d = -1) {
  int idx[4] = {a, b, c, d}, distinct = 0;
  for (int k = 0; k < 4; ++k) {
    if (idx[k] < 0 || idx[k] >= K) continue;
    bool seen = false;
    for (int j = 0; j < k; ++j) seen = seen || idx[j] == idx[k];
    distinct += seen ? 0 : 1;
  }
  S out = r * 0.0 + 1.0;  // a constant with r's derivative slots (a dual number's zero derivatives)
  for (int k = 0; k < distinct; ++k) out = out * r;
  return out;
}

/// The model's own keys (spec "Parameters"; the harness adds the shared ones: t_max, seeds, ...),
/// with ranges, one-line docs, the conditions where they apply, and the test-only `break_term`.
ParamSet& declare_model_keys(ParamSet& set);
/// Cross-key checks (lengths of vstar and v0, shapes and validity of Q0/R0/T0 ...); throws
/// InputError naming the key.
void check(const Params& p);
/// Q0, R0, T0 (and v0) as a state of s.layout(); InputError unless all three are given.
Eigen::VectorXd given_initial_state(const Params& p, const Config& s);

}  // namespace hdat::committee
