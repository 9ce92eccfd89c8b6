#pragma once
// Online SGD of the soft committee machine at finite input dimension N, exactly as specified
// (../shared/spec/committee.md): x ~ N(0, I_N) fresh at every step, teacher y = Σ_m v*_m g(ν_m) + σζ,
// student ŷ = Σ_k v_k g(λ_k), λ = w·x/√N, and per step
//   w_k ← (1 − wd/N) w_k + (η/√N) v_k g'(λ_k) Δ x,      v_k ← v_k + (η_v/N) g(λ_k) Δ   (train_v),
// t = steps / N. The teacher is orthonormal (w*_m·w*_n = N δ_mn exactly) or Gaussian.
//
// The data enter in ONE place (draw_sample: x, its fields u = (λ, ν), the noise ζ) and the weights
// change in one place (apply_step); what a step does given the fields is StepRule, shared with any
// other engine (the exact reduced simulator of issue 17 samples the fields and the orthogonal part
// of x from their law given the weights' Gram matrix and reuses the rule).
//
// Per step: N Gaussian draws, one (K+M)×N matrix-vector product, one rank-one update of K×N; no
// allocation.
#include <Eigen/Dense>
#include <boost/random/normal_distribution.hpp>
#include <cstdint>

#include "hdat/committee/model.hpp"
#include "hdat/core/model.hpp"
#include "hdat/core/random.hpp"

namespace hdat::committee {

/// The learning rule on the fields: given u = (λ, ν) and ζ, the error and the step's coefficients.
class StepRule {
 public:
  explicit StepRule(const Setup& setup) : s_(setup) {}
  struct Error {
    double clean;  ///< Δ0 = Σ_m v*_m g(ν_m) − Σ_k v_k g(λ_k)
    double total;  ///< Δ = Δ0 + σζ
  };
  /// first[k] = η v_k g'(λ_k) Δ (so that Δw_k = first[k] x / √N) and, when second != nullptr,
  /// second[k] = η_v g(λ_k) Δ (so that Δv_k = second[k] / N).
  Error coefficients(const double* u, double zeta, const Eigen::VectorXd& v, double* first, double* second) const;
  const Setup& setup() const { return s_; }

 private:
  Setup s_;
};

class OnlineSGD final : public FiniteSystem {
 public:
  /// One independent run at dimension N: teacher, student initialisation, training data, drift
  /// samples and test set come from the named streams of (seed, replica).
  OnlineSGD(const Setup& setup, int N, std::uint64_t seed, std::uint64_t replica, long test_size = 2000);

  double time() const override { return static_cast<double>(steps_) / N_; }
  void advance_to(double t) override;  ///< to steps = round(t N)
  /// Q, R, T (and v when trained) of the current weights, in Setup::layout().
  Eigen::VectorXd state() const override;
  /// "eg": the exact generalisation error of the current weights (its closed form is a function
  /// of the measured overlaps: the fields of a fresh input are exactly N(0, C)); "eg_test": ½ Δ0²
  /// over `test_size` fresh test inputs (the same ones at every call), with its standard error.
  Observables observe() override;
  /// One step's increment N·(state after − state before) from the current weights on a fresh
  /// sample of the drift-check stream, not applied, in the theory's terms (Setup::active_terms()).
  DriftTerms increment() override;

  /// One SGD step on a fresh sample of the training stream.
  void step();
  /// One SGD step on the given input x (N) and label noise ζ.
  void step(const Eigen::VectorXd& x, double zeta);
  /// The increment, in terms, that step(x, ζ) would make.
  DriftTerms increment(const Eigen::VectorXd& x, double zeta) const;

  long steps() const { return steps_; }
  int dimension() const { return N_; }
  Eigen::MatrixXd students() const { return W_.leftCols(s_.K); }  ///< N×K
  Eigen::MatrixXd teachers() const { return W_.rightCols(s_.M); }  ///< N×M
  const Eigen::VectorXd& second_layer() const { return v_; }
  const Setup& setup() const { return s_; }

 private:
  // The only code that reads the data: a fresh x, its fields u = Wᵀx/√N and the label noise.
  void draw_sample(rng::Engine& engine);
  void fields(const Eigen::VectorXd& x);
  // The only code that changes the weights: w_k ← α w_k + first[k] x/√N, v ← v + second/N.
  void apply_step(const Eigen::VectorXd& x);
  DriftTerms increment_terms(const Eigen::VectorXd& x, double zeta, const Eigen::VectorXd& u) const;

  Setup s_;
  int N_;
  double sqrtN_;
  std::uint64_t seed_, replica_;
  long test_size_;
  long steps_ = 0;
  StepRule rule_;
  Eigen::MatrixXd W_;  ///< N × (K + M): students w_k, then teachers w*_m (one product gives all fields)
  Eigen::VectorXd v_;  ///< the student's second layer
  rng::Engine data_, drift_;
  boost::random::normal_distribution<double> normal_;
  // Scratch of one step.
  Eigen::VectorXd x_, u_, first_, second_;
  double zeta_ = 0;
};

}  // namespace hdat::committee
