#pragma once
// The state of the fixed point at one sample ratio α, shared by the T = 1 closed form and the
// softmax channel (T >= 2): order parameters, the prior-side unknowns and the observables.
// Conventions (derivation.md §1): q = Tr Ŝ²/d, m = Tr Ŝ S0/d, Σ the susceptibility;
// η = m̂/Σ̂, δ = √q̂/m̂, threshold t = 2λ̃/m̂ (the T = 1 section of the spec calls t/λ̃ = ε).
#include <nlohmann/json.hpp>
#include <string>

#include "hdat/tied_attention/prior.hpp"

namespace hdat::tied_attention {

struct FixedPointState {
  double alpha = 0;
  // Prior-side unknowns.
  double delta = 0;  ///< δ: noise level of the effective denoising problem S0 + δ Z
  double t = 0;      ///< threshold of the spectral ReLU (t = λ̃ ε in the T = 1 notation)
  double eps = 0;    ///< ε = t/λ̃ (T = 1 notation: 1 + 4Σ = 4αε)
  double eta = 1;    ///< η = m̂/Σ̂ (1 for the linear channel)
  // Order parameters and conjugates.
  double q = 0, m = 0, Sigma = 0, qhat = 0, mhat = 0, Sigmahat = 0;
  JValues j;  ///< J and derivatives at (δ, t)
  // Observables.
  double mse = 0;            ///< |Ŝ − S0|_F²/d = Q0 − 2m + q
  double train_loss = 0;     ///< training loss per sample (sequence)
  double test_error = 0;     ///< fresh-sample error against noisy labels (as the training labels)
  double test_error_clean = 0;  ///< fresh-sample error against noiseless labels
  double rank = 0;           ///< rank(Ŝ)/d = 1 − F_δ(t)
  double trace = 0;          ///< Tr Ŝ/d = η ∫ (x − t)₊ dμ_δ
  double regulariser = 0;    ///< λ̃ Tr Ŝ/d (per d² of the ERM objective)
  double objective = 0;      ///< (training loss · n + d λ̃ Tr Ŝ)/d²
  // Solver report.
  bool converged = false;
  int branches = 1;          ///< fixed points found at this α (T = 1: crossings of α(δ))
  double residual = 0;       ///< largest residual of the fixed-point equations
  std::string message;
  nlohmann::json to_json() const;
};

}  // namespace hdat::tied_attention
