#pragma once
// T = 1, linear channel: matrix sensing y = Tr(Z S0) + √Δ ξ, Z = (x xᵀ − I)/√d, ERM
//   min_{S ⪰ 0} Σ_μ (y_μ − Tr Z_μ S)² + d λ̃ Tr S,      n = α d².
// The fixed point in (δ, ε), t = λ̃ ε (derivation.md §4):
//   (A) 4αδ − δ/ε = ∂_δ J(δ, t)
//   (B) Q0 + Δ/2 + 2αδ² − δ²/ε = J(δ, t) − t ∂_t J(δ, t)
// Eliminating α between (A) and (B) leaves one equation in (δ, t):
//   G(δ, t) = Q0 + Δ/2 − J + t ∂_t J + (δ/2) ∂_δ J − δ² λ̃/(2t) = 0,
// and then α = (∂_δ J/δ + λ̃/t)/4 is explicit. For fixed δ, G → −∞ as t → 0⁺ and → Q0 + Δ/2 as
// t → ∞ (bracket, then TOMS 748). At small λ̃ near the interpolation threshold G(δ, ·) has three
// roots for some δ (the curve G = 0 folds in the δ direction), so a learning curve is traced by
// pseudo-arclength continuation of G = 0 in (log δ, log t) from small α (large δ) to large α
// (predictor along the secant, corrector by TOMS 748 along the normal), α is read along the curve,
// every crossing of each requested α is refined, and the fixed point of lowest ERM objective is kept.
#include <memory>
#include <vector>

#include "hdat/tied_attention/state.hpp"

namespace hdat::tied_attention {

struct LinearProblem {
  std::shared_ptr<const TargetLaw> target;
  double noise = 0.1;   ///< Δ
  double lambda = 1.0;  ///< λ̃ (trace penalty)
  LawMethod method = LawMethod::automatic;
};

struct LinearOptions {
  QuadratureOptions quadrature;
  int t_bits = 46;          ///< precision of the inner root t(δ), in bits
  int delta_bits = 44;      ///< precision of the α crossing along the curve
  double max_step = 0.25;   ///< largest continuation step in (log δ, log t)
  double min_step = 1e-6;   ///< below this the continuation gives up
  /// Deliberately wrong equations, for tests that must see a theory-vs-simulation check fail:
  /// ∂_δ J is multiplied by this factor everywhere (1 = the correct equations).
  double broken_ddelta_factor = 1.0;
};

struct LinearSummary {
  bool converged = true;
  long j_evaluations = 0;     ///< J(δ, t) triples computed
  long law_constructions = 0;  ///< μ_δ built (one per δ visited)
  long quadrature_evaluations = 0;
  double max_quadrature_error = 0;  ///< relative, over every J used
  int folds = 0;              ///< turning points in δ along the traced curve
  int alpha_turns = 0;        ///< turning points of α along the curve (several fixed points per α)
  int curve_points = 0;       ///< points of the continuation
  double delta_min = 0, delta_max = 0;  ///< traced range
  double wall_seconds = 0;
  std::string message;
  nlohmann::json to_json() const;
};

class LinearT1Solver {
 public:
  LinearT1Solver(LinearProblem problem, LinearOptions options = {});

  /// A point of the curve G = 0 with its α. ok = false if no root was found.
  struct DeltaPoint {
    double delta = 0, t = 0, alpha = 0;
    JValues j;
    bool ok = false;
  };
  /// t(δ): the root of G(δ, ·) bracketed from t_guess (one of them if several). 
  DeltaPoint at_delta(double delta, double t_guess = 0);
  /// G(δ, t) and the J values it used.
  double G(double delta, double t, JValues* j = nullptr);
  /// The curve G = 0 traced from α <= alpha_lo to α >= alpha_hi.
  std::vector<DeltaPoint> trace(double alpha_lo, double alpha_hi);

  /// The full state (observables) of a solved δ-point.
  FixedPointState state(const DeltaPoint& p) const;

  /// Fixed points at the requested α (any order). Summary accumulates.
  std::vector<FixedPointState> curve(const std::vector<double>& alphas);
  FixedPointState solve(double alpha) { return curve({alpha}).front(); }

  const LinearSummary& summary() const { return summary_; }
  const LinearProblem& problem() const { return problem_; }
  double Q0() const { return Q0_; }

 private:
  std::unique_ptr<SpectralLaw> law(double delta);
  JValues jv(const SpectralLaw& mu, double t);
  DeltaPoint project(double ld0, double lt0, double nd, double nt, double reach);
  LinearProblem problem_;
  LinearOptions options_;
  LinearSummary summary_;
  double Q0_ = 0;
};

}  // namespace hdat::tied_attention
