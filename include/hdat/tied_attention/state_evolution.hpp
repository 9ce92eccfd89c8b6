#pragma once
// The state evolution of Bayes-optimal AMP (GAMP with the RIE denoiser; derivation.md §10.5), one
// step per AMP iteration:
//   v_0 = Q0 − m0²                          uninformed start Ŝ_0 = m0 I (m0 = Tr S0/d, the prior mean)
//   Λ̂_t = α I(Q0 − v_t, v_t)               channel update (ChannelInformation)
//   δ_t² = 1/(2 Λ̂_t)
//   v_{t+1} = mmse(δ_t²) = δ_t² − (4π²/3) δ_t⁴ ∫ ρ_{δ_t}³     denoiser update (RIE MMSE, μ_δ = μ0 ⊞ σ_{δ²})
// v_t is the MSE |Ŝ_t − S0|²/d of AMP's iterate t; its overlaps are m_t = Tr Ŝ_t S0/d = q_t =
// Tr Ŝ_t²/d = Q0 − v_t (Nishimori). The fixed point reached from the uninformed start is the
// Bayes-optimal error (the `bayes_mse` of curve.csv) when the SE has a single stable branch.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/tied_attention/bayes_channel.hpp"
#include "hdat/tied_attention/spectral_law.hpp"

namespace hdat::tied_attention {

struct StateEvolutionOptions {
  int T = 2;
  BayesChannel channel = BayesChannel::softmax;
  double noise = 0;                         ///< Δ
  std::shared_ptr<const TargetLaw> prior;   ///< μ0: the target's law (Wishart limit or a finite-d spectrum)
  int max_iter = 1000;                      ///< steps when run to convergence
  double tol = 1e-9;                        ///< |v_{t+1} − v_t| <= tol · v_t
  double recovery_floor = 1e-12;            ///< v <= floor · Q0: perfect recovery (v = 0 is a fixed point)
  QuadratureOptions quadrature;
  ChannelInformationOptions information;    ///< sampling of the hardmax channel's update
  /// Test only (break_term): multiply the shrinkage term (4π²/3) δ⁴ ∫ρ³ of the MMSE (denoiser) or the
  /// channel's Fisher information (channel). 1 = the Bayes equations.
  double shrinkage_factor = 1.0;
  double information_factor = 1.0;
  void validate() const;  ///< InputError naming the offending setting
};

struct StateEvolutionStep {
  int t = 0;
  double v = 0;            ///< MSE of the iterate t
  double q = 0;            ///< Q0 − v: Tr Ŝ_t²/d = Tr Ŝ_t S0/d
  double information = 0;  ///< I(q, v) (per sample)
  double information_se = 0;  ///< its sampling error (hardmax; 0 for the closed forms)
  double delta = 0;        ///< δ_t = (2 α I)^(−1/2): the noise of the denoising problem at step t
};

struct StateEvolutionRun {
  double alpha = 0;
  std::vector<StateEvolutionStep> steps;  ///< t = 0 .. iterations
  bool converged = false;
  bool perfect_recovery = false;
  double seconds = 0;
  std::string message;
  double mse_se = 0;  ///< sampling error of the fixed point's MSE (hardmax), through the linearised SE map
  double mse() const { return steps.empty() ? 0.0 : steps.back().v; }
  nlohmann::json summary_json() const;
};

class StateEvolution {
 public:
  explicit StateEvolution(StateEvolutionOptions options);
  /// From the uninformed start: `steps` >= 0 iterations exactly (a trajectory to compare with AMP's,
  /// continued at its fixed point once converged), or until convergence when steps < 0.
  StateEvolutionRun run(double alpha, int steps = -1) const;
  /// The denoiser update: mmse(δ²) of the RIE for μ0 at noise variance δ².
  double mmse(double delta2) const;
  /// One step of the map v ↦ mmse(1/(2 α I(Q0 − v, v))), with the information scaled by `scale`.
  double step(double alpha, double v, double scale = 1.0) const;
  double Q0() const { return Q0_; }
  double prior_mean() const { return m0_; }
  const StateEvolutionOptions& options() const { return opt_; }

 private:
  double fixed_point_se(double alpha, double v, const ChannelInformation::Value& info) const;
  StateEvolutionOptions opt_;
  ChannelInformation info_;
  double Q0_ = 0, m0_ = 0;
};

}  // namespace hdat::tied_attention
