#pragma once
// The `tied-attention` model's declaration: its parameters (one ParamSet shared by the theory and
// the finite-d simulator) and the objects both sides build from them (the target's spectral law,
// the α grid, the seeds).
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hdat/core/finite_size_check.hpp"
#include "hdat/core/gaussian.hpp"
#include "hdat/core/params.hpp"
#include "hdat/tied_attention/bayes_channel.hpp"
#include "hdat/tied_attention/spectral_law.hpp"

namespace hdat::tied_attention {

/// Every key of the model (spec: T, kappa0, kappa, noise, lambda, beta, beta0, target, gamma, task,
/// alphas, d, seeds, training; plus numerical settings).
const ParamSet& param_set();

/// The factors of the test-only `break_term` key (1 where the term is intact).
struct BrokenTerms {
  double ddelta_J = 1, dq_M = 1;             ///< ERM theory: prior side, sample side
  double shrinkage = 1, information = 1;     ///< Bayes state evolution: denoiser, channel
};

enum class Target { wishart, powerlaw };
enum class Training { factorized, convex, direct };
std::string training_name(Training t);
enum class Estimator { erm, amp };

/// The typed, resolved configuration: parsed once from the command's parameters (the model's check
/// attaches it, config_for() returns it); the theory, ERM, AMP and the figures read it.
struct Config {
  // The task (spec): T tokens, the target S0, the labels.
  int T = 2;
  Target target = Target::wishart;
  double kappa0 = 0.5;
  double gamma = 1.0;         ///< power-law exponent (target=powerlaw)
  double Q0 = 1.5;            ///< Tr S0²/d: the `Q0` key, or 1 + κ0 when unset
  BayesChannel channel = BayesChannel::softmax;  ///< `auto` resolved: T = 1 linear, else softmax
  double beta = 1, beta0 = 1, noise = 0.1;
  bool seq2seq = false;       ///< task=seq2seq
  // The estimator.
  Training training = Training::factorized;
  double lambda = 1, kappa = 1;
  Estimator estimator = Estimator::erm;
  bool oracle_prior = false;  ///< amp_prior=oracle
  int amp_max_iter = 60;
  double amp_tol = 1e-5, amp_damping = 1;
  long se_samples = 16384;
  // What is computed, where.
  std::vector<double> alphas;
  int d = 100;
  std::vector<long> seeds;
  std::vector<int> dims;      ///< sorted, distinct; empty when unset (each estimator has its default)
  std::vector<double> lambda_grid;  ///< empty when unset
  std::optional<double> spectrum;
  bool bayes = true;
  // Numerics.
  double quad_tol = 1e-11;
  long mc_samples = 32768;
  Sampling sampling = Sampling::sobol;
  std::string sampling_name = "sobol";
  std::uint64_t mc_seed = 1;
  double damping = 0.5, fp_tol = 1e-7;
  int fp_max_iter = 400;
  double erm_tol = 1e-9;
  long erm_max_iter = 20000, test_samples = 20000;
  // Validate.
  InverseSizeCriterion criterion;
  std::string break_term = "none";
  BrokenTerms broken;

  /// Parses and checks every key (InputError naming the key).
  static Config from(const Params& p);

  std::string channel_name() const { return bayes_channel_name(channel); }
  bool linear_channel() const { return channel == BayesChannel::linear; }
  /// The theory's fixed point in closed form: the linear channel with the trace penalty.
  bool closed_form() const { return linear_channel() && training != Training::direct; }
  /// The weight decay λ/√κ on W equivalent to the trace penalty.
  double lambda_weight_decay() const { return lambda / std::sqrt(kappa); }
  /// The target's spectral law μ0 for the theory: Wishart (d → ∞) or the power law at this d.
  std::shared_ptr<const TargetLaw> target_law() const { return target_law_at(d); }
  std::shared_ptr<const TargetLaw> target_law_at(int size) const;
  QuadratureOptions quadrature() const;
};

/// The configuration the model's check attached to `p`, or a new one parsed from it.
std::shared_ptr<const Config> config_for(const Params& p);

/// Cross-key checks (throws InputError); attaches the parsed Config.
void check_params(Params& p);

/// The sample ratios of `alphas`: a JSON list, or "start:stop:count" (linear), or
/// "log:start:stop:count".
std::vector<double> alpha_grid(const Params& p, const std::string& key = "alphas");

/// Seeds of `seeds`: an integer n (seeds 1..n) or a list.
std::vector<long> seed_list(const Params& p);

}  // namespace hdat::tied_attention
