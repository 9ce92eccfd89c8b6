#pragma once
// The general fixed point (derivation.md §4, §8): unknowns x = (Σ, m, q);
//   sample side  (q̂, m̂, Σ̂) = S(x)       (SampleSide: softmax or linear channel, by sampling)
//   prior side   x = P(q̂, m̂, Σ̂)        (η = m̂/Σ̂, δ = √q̂/m̂, t = 2λ̃/m̂:
//                                         q = η² J, m = η[J − (δ ∂_δJ + t ∂_tJ)/2], Σ = ∂_δJ/(2Σ̂δ))
// solved by the core fixed-point solver (Anderson by default; x ← P(S(x))), warm started along α.
// Standard errors of the order parameters propagate the sample side's covariance through the
// linearised map: δx = (I − P'S')⁻¹ P' δh (P' and S' by finite differences, common random numbers).
// The prior can be the trace penalty on S ⪰ 0 (factorised/convex training) or a Frobenius penalty
// (direct training: q = (m̂²Q0 + q̂)/Σ̂'², m = m̂ Q0/Σ̂', Σ = 1/Σ̂', Σ̂' = Σ̂ + 4λ_F).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/fixed_point.hpp"
#include "hdat/tied_attention/channel.hpp"
#include "hdat/tied_attention/state.hpp"

namespace hdat::tied_attention {

enum class PriorKind { trace_psd, frobenius };

struct PriorSide {
  std::shared_ptr<const TargetLaw> target;
  PriorKind kind = PriorKind::trace_psd;
  double lambda = 1.0;  ///< λ̃ (trace) or λ_F (Frobenius)
  LawMethod method = LawMethod::automatic;
  QuadratureOptions quadrature;
  double broken_ddelta_factor = 1.0;  ///< tests only (see LinearOptions)

  struct Out {
    double q = 0, m = 0, Sigma = 0, delta = 0, t = 0, eta = 0;
    JValues j;
  };
  Out evaluate(double qhat, double mhat, double Sigmahat) const;
};

/// The general solver's settings: the core fixed-point solver's (Anderson from the previous point of
/// the curve by default) and whether to propagate the sample side's errors.
struct GeneralSolverOptions {
  FixedPointOptions fixed_point;
  bool error_bars = true; ///< propagate the sample side's standard errors to the order parameters
};

/// What the solver did over the points of a curve.
struct CurveSolveSummary {
  int points = 0, converged_points = 0;
  std::string method;           ///< the core solver's method
  long sample_evaluations = 0;  ///< passes over the sample set
  long iterations = 0;
  double wall_seconds = 0;
  double mean_prox_iterations = 0;
  long multistart_switches = 0, unconverged_prox = 0;
  std::string message;
  nlohmann::json to_json() const;
};

/// Standard errors at one fixed point.
struct FixedPointErrors {
  double Sigma = 0, m = 0, q = 0, mse = 0, test_error = 0, train_loss = 0;
};

class GeneralSolver {
 public:
  GeneralSolver(PriorSide prior, std::shared_ptr<SampleSide> sample, double Q0, GeneralSolverOptions options = {});

  /// Fixed points at the requested α (in the given order; each warm started from the previous).
  std::vector<FixedPointState> curve(const std::vector<double>& alphas);
  /// One fixed point from x0 = (Σ, m, q).
  FixedPointState solve(double alpha, const Eigen::Vector3d& x0);

  const std::vector<FixedPointErrors>& errors() const { return errors_; }
  const CurveSolveSummary& summary() const { return summary_; }
  /// An initial guess: the linear-channel closed form at α_eff = α (T² + T − 2)/2 rescaled.
  Eigen::Vector3d initial_guess(double alpha) const;

 private:
  Eigen::Vector3d map(double alpha, const Eigen::Vector3d& x, SampleSideResult* s, PriorSide::Out* p);
  FixedPointState make_state(double alpha, const Eigen::Vector3d& x, const SampleSideResult& s, const PriorSide::Out& p) const;
  FixedPointErrors error_bars(double alpha, const Eigen::Vector3d& x, const SampleSideResult& s);

  PriorSide prior_;
  std::shared_ptr<SampleSide> sample_;
  double Q0_;
  GeneralSolverOptions opt_;
  CurveSolveSummary summary_;
  std::vector<FixedPointErrors> errors_;
};

}  // namespace hdat::tied_attention
