#pragma once
// Online SGD of the specialization model at finite dimension D, exactly as specified
// (../shared/spec/specialization.md): spikes K* with K*ᵀK* = D I, value v* ⟂ K* with |v*|² = D,
// tokens x_ℓ ~ N(0, I_D) with x_ε = K*θ/√D + g, label y = x_ε·v*/√D + Δξ, student fields
// χ_hℓ = x_ℓ·k_h/√D, prediction ŷ = Σ_ℓ w_ℓ(χ) z_ℓ, loss ½(y − ŷ)², one step per `batch` fresh
// samples, t = steps / D. The attention code is the theory's (hdat/specialization/attention.hpp).
//
// Per step: L·D Gaussian draws (rng::NormalStream: counter-based ARS and a vectorised ziggurat)
// and about 2·L·D·(H+1) multiply-adds; memory O(L·D + H·D); no allocation inside the step.
#include <Eigen/Dense>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>

#include "hdat/core/model.hpp"
#include "hdat/core/normal_stream.hpp"
#include "hdat/core/random.hpp"
#include "hdat/specialization/model.hpp"

namespace hdat::specialization {

/// How the simulator measures its test risk (observe()).
struct TestOptions {
  long size = 10000;       ///< fresh test sequences per measurement
  bool projected = true;   ///< draw them in the span of the weights (same law, cheaper; see test_risk)
};

/// ½ (y − ŷ)² over n test sequences whose tokens are drawn by their coordinates u ~ N(0, I_r) in an
/// orthonormal basis of the span of the weights (the other coordinates of a Gaussian token enter
/// nothing): fields [χ, z] = uᵀP (P: r × (H + 1)), the signal token adds S θ (S: r × F). The law of
/// D-dimensional test sequences at L·r draws each; mean and its standard error. Both engines use it.
std::pair<double, double> projected_test_risk(const Config& s, const Attention& att, const Eigen::MatrixXd& P, const Eigen::MatrixXd& S,
                                              long n, rng::Engine& test);

/// The model's finite-dimensional system (hdat::FiniteSystem): state (M, R[, b]) as in the theory,
/// observables the test risk (with its standard error) and the value overlaps v_h = k_h·v*/D.
/// The biases b_h offset the logits (Config::logit_offset); with train_bias each step also moves them,
/// b_h ← b_h − (η_b/D) ∂loss/∂b_h = b_h + (η_b/(D B)) Σ_b (y − ŷ) Σ_ℓ G_hℓ.
class OnlineSGD : public FiniteSystem {
 public:
  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  /// One independent run: teacher, student initialisation and data streams come from (seed, replica).
  OnlineSGD(const Config& setup, int D, std::uint64_t seed, std::uint64_t replica, TestOptions test = {});

  /// One SGD step on `batch` fresh samples.
  void step();
  /// Run until t = steps / D reaches `t` (rounded to whole steps).
  void advance_to(double t) override;
  long steps() const { return steps_; }
  double time() const override { return static_cast<double>(steps_) / D_; }
  Eigen::VectorXd state() const override;
  Observables observe() override;
  /// increment() in the theory's terms: "eta" (D·ΔM, D·(Δkᵀk + kᵀΔk)/D), "eta2" (D·ΔkᵀΔk/D) and,
  /// with train_bias, "bias" (D·Δb).
  DriftTerms increment() override;

  Eigen::MatrixXd M() const;  ///< K*ᵀk / D as H x F
  Eigen::MatrixXd R() const;  ///< kᵀk / D
  Eigen::VectorXd value_overlap() const;  ///< k_h·v*/D: stays O(1/√D)
  const Eigen::VectorXd& bias() const { return b_; }  ///< b_h: fixed, or trained

  /// ½ (y − ŷ)² averaged over `n` fresh test sequences drawn from the run's test stream (the same
  /// random numbers at every call: common random numbers across times), and its standard error.
  /// `projected` (default) draws each token's coordinates in an orthonormal basis of
  /// span(K*, v*, k_1..k_H) only: the other D − F − 1 − H coordinates of a Gaussian token do not
  /// enter χ, z, y or ŷ, so this has exactly the law of full D-dimensional test sequences (all
  /// finite-D overlaps kept) at a cost of L·(F+1+H) instead of L·D draws per sequence.
  /// `projected = false` draws full sequences (slow; used to check the equivalence).
  std::pair<double, double> test_risk(long n, bool projected = true);

  /// Increments of one step from the current weights WITHOUT applying them (drift check):
  /// D·ΔM, D·ΔR split into the part linear in η and the η² part. Uses the data stream.
  struct Increment {
    Eigen::MatrixXd dM, dR_drift, dR_noise;
    Eigen::VectorXd db;  ///< D·Δb (zero unless train_bias)
  };
  Increment increments();

  /// The Gram matrix WᵀW/D of keys, value and spikes (in that order: H, 1, F).
  Eigen::MatrixXd gram() const;
  nlohmann::json record() const override { return {{"engine", "full"}}; }
  Eigen::MatrixXd keys() const { return W_.leftCols(s_.H); }
  void set_keys(const Eigen::MatrixXd& K) { W_.leftCols(s_.H) = K; }
  int dimension() const { return D_; }

 private:
  struct Sample {
    int location;    ///< ε
    double noise;    ///< ξ of the label y = z_ε + Δξ
  };
  // Draw one sequence into X (rows = tokens: L·D numbers of `tokens`), its signal location, spike
  // strengths and label noise from `eng`, and its fields [χ, z] = X W / √D into fields_; return the
  // location and the noise. X is drawn a chunk of coordinates at a time, and the chunk's part of the
  // fields added while it is in cache.
  Sample draw(rng::Engine& eng, rng::NormalStream& tokens, RowMatrix& X);
  // Weights and the vector-Jacobian product of the drawn sequence's fields; returns y − ŷ.
  double forward_backward(const Sample& smp);
  // update_ = the step's change of the keys (η/B) Σ_b (y − ŷ) Σ_ℓ G_hℓ (x_ℓ/√D − κ k_h/D), and
  // bias_update_ = that of the biases (η_b/(D B)) Σ_b (y − ŷ) Σ_ℓ G_hℓ (zero unless train_bias).
  void accumulate_update();

  Config s_;
  TestOptions test_;
  int D_;
  double sqrtD_;
  long steps_ = 0;
  std::uint64_t seed_, replica_;
  Eigen::MatrixXd Kstar_;  ///< D x F
  Eigen::MatrixXd W_;      ///< D x (H + 1): the keys k_h, then v* (one product gives χ and z)
  Eigen::VectorXd b_;      ///< the heads' logit biases
  rng::Engine data_;
  rng::NormalStream tokens_;  ///< the training tokens
  boost::random::normal_distribution<double> normal_;
  Attention att_;
  // Scratch.
  RowMatrix X_;
  Eigen::MatrixXd fields_, chi_, a_, m_, G_, update_;
  Eigen::MatrixXd weighted_G_;  ///< (y − ŷ) G / √D of one sample
  Eigen::VectorXd w_, z_, theta_, signal_, bias_update_;
};

}  // namespace hdat::specialization
