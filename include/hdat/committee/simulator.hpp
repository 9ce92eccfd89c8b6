#pragma once
// Online SGD of the soft committee machine at finite input dimension N, exactly as specified
// (../shared/spec/committee.md): x ~ N(0, I_N) fresh at every step, teacher y = Σ_m v*_m g(ν_m) + σζ,
// student ŷ = Σ_k v_k g(λ_k), λ = w·x/√N, and per step
//   w_k ← (1 − wd/N) w_k + (η/√N) v_k g'(λ_k) Δ x,      v_k ← v_k + (η_v/N) g(λ_k) Δ   (train_v),
// t = steps / N. The teacher is orthonormal (w*_m·w*_n = N δ_mn exactly) or Gaussian.
//
// The data enter in ONE place (draw_sample: x, its fields u = (λ, ν), the noise ζ) and the weights
// change in one place (apply_step); what a step does given the fields is StepRule, shared with the
// other engine.
//
// Two engines of the same process (derivation.md §8):
//   OnlineSGD   the N-dimensional weights. Per step: N Gaussian draws, one (K+M)×N matrix-vector
//               product, one rank-one update of K×N; no allocation.
//   ReducedSGD  the EXACT chain of the Gram matrix C = WᵀW/N of the K + M weight vectors: a step
//               needs x only through its fields u = Wᵀx/√N ~ N(0, C) and |x|²/N = (|Pu|² + χ²_{N−r})/N
//               (P the projection on span W, r its rank, the χ² the part of x orthogonal to it), so
//               the chain of C has the law of the full one at a cost per step independent of N.
#include <Eigen/Dense>
#include <boost/random/normal_distribution.hpp>
#include <cstdint>
#include <vector>

#include "hdat/committee/model.hpp"
#include "hdat/core/model.hpp"
#include "hdat/core/normal_stream.hpp"
#include "hdat/core/random.hpp"

namespace hdat::committee {

/// What a step's rule reads beyond its sample: η at the step's time (schedule) and the dropout mask.
struct StepControls {
  double eta = 0;
  const std::uint8_t* kept = nullptr;  ///< K entries, 1 kept and 0 dropped; null: every unit kept
};

/// The learning rule on the fields: given u = (λ, ν) and ζ, the error and the step's coefficients.
class StepRule {
 public:
  explicit StepRule(const Config& setup) : s_(setup) {}
  struct Error {
    double clean;  ///< Δ0 = Σ_m v*_m g(ν_m) − Σ_k v_k g(λ_k)
    double total;  ///< Δ = Δ0 + σζ
  };
  /// first[k] = η v_k g'(λ_k) Δ (so that Δw_k = first[k] x / √N) and, when second != nullptr,
  /// second[k] = η_v g(λ_k) Δ (so that Δv_k = second[k] / N).
  /// With dropout a dropped unit (kept[k] = 0) leaves the output and gets first[k] = second[k] = 0.
  Error coefficients(const double* u, double zeta, const Eigen::VectorXd& v, const StepControls& c, double* first, double* second) const;
  /// The same at the constant η with every unit kept.
  Error coefficients(const double* u, double zeta, const Eigen::VectorXd& v, double* first, double* second) const {
    return coefficients(u, zeta, v, StepControls{s_.eta, nullptr}, first, second);
  }
  /// Whether steps draw dropout masks (a keep-probability below 1, or scheduled).
  bool dropout() const { return s_.dropout_keep != 1.0 || (s_.schedule && s_.schedule->find("dropout_keep")); }
  /// The controls of a step at time t: η(t) and, with dropout, a fresh mask (each unit kept with
  /// probability r(t), K uniforms from `engine`) written into `mask`.
  template <class Engine>
  StepControls controls_at(double t, Engine& engine, std::vector<std::uint8_t>& mask) const {
    StepControls c{s_.eta_at(t), nullptr};
    if (!dropout()) return c;
    const double r = s_.keep_at(t);
    mask.resize(static_cast<std::size_t>(s_.K));
    for (auto& m : mask) m = uniform(engine) < r ? 1 : 0;
    c.kept = mask.data();
    return c;
  }
  /// One step's increment N·(state after − state before), in the theory's terms, from the Gram
  /// matrix C of the weights (students first), the second layer v, the fields u, x2 = |x|²/N and ζ
  /// at dimension N: the same law for both engines.
  DriftTerms increment(const Eigen::MatrixXd& C, const Eigen::VectorXd& v, const Eigen::VectorXd& u, double x2, double zeta,
                       int N, const StepControls& c) const;
  DriftTerms increment(const Eigen::MatrixXd& C, const Eigen::VectorXd& v, const Eigen::VectorXd& u, double x2, double zeta,
                       int N) const {
    return increment(C, v, u, x2, zeta, N, StepControls{s_.eta, nullptr});
  }
  const Config& setup() const { return s_; }

 private:
  template <class Engine>
  static double uniform(Engine& engine) {
    return static_cast<double>(engine() >> 11) * 0x1.0p-53;  // 53 random bits in [0, 1)
  }
  Config s_;
};

/// The step of the weights' Gram matrix C = WᵀW/N (p = K + M, students first) given the fields u,
/// x2 = |x|²/N and the coefficients `first` (K; Δw_k = first_k x/√N) after the decay α = 1 − wd/N of
/// the students: with A = diag(α 1_K, 1_M) and a = (first, 0_M),
///   C ← A C A + (A u aᵀ + a uᵀ A)/N + x2 a aᵀ/N            (exactly W'ᵀW'/N).
void gram_step(Eigen::MatrixXd& C, const Eigen::VectorXd& u, double x2, const Eigen::VectorXd& first, double alpha, int N);

/// The observables of weights with Gram matrix C and second layer v: "eg" exactly, "eg_test" over
/// `test_size` fresh inputs drawn from the test stream of (seed, replica) (their fields are exactly
/// N(0, C)), with its standard error. Shared by both engines.
Observables observe_gram(const Config& s, const Eigen::MatrixXd& C, const Eigen::VectorXd& v, std::uint64_t seed, std::uint64_t replica,
                         long test_size);

class OnlineSGD final : public FiniteSystem {
 public:
  /// One independent run at dimension N: teacher, student initialisation, training data, drift
  /// samples and test set come from the named streams of (seed, replica).
  OnlineSGD(const Config& setup, int N, std::uint64_t seed, std::uint64_t replica, long test_size = 2000);

  double time() const override { return static_cast<double>(steps_) / N_; }
  void advance_to(double t) override;  ///< to steps = round(t N)
  /// Q, R, T (and v when trained) of the current weights, in Config::layout().
  Eigen::VectorXd state() const override;
  /// "eg": the exact generalisation error of the current weights (its closed form is a function
  /// of the measured overlaps: the fields of a fresh input are exactly N(0, C)); "eg_test": ½ Δ0²
  /// over `test_size` fresh test inputs (the same ones at every call), with its standard error.
  Observables observe() override;
  /// One step's increment N·(state after − state before) from the current weights on a fresh
  /// sample of the drift-check stream, not applied, in the theory's terms (Config::active_terms()).
  DriftTerms increment() override;

  /// One SGD step on a fresh sample of the training stream.
  void step();
  /// One SGD step on the given input x (N) and label noise ζ.
  void step(const Eigen::VectorXd& x, double zeta);
  /// The increment, in terms, that step(x, ζ) would make.
  DriftTerms increment(const Eigen::VectorXd& x, double zeta) const;

  long steps() const { return steps_; }
  int dimension() const { return N_; }
  nlohmann::json record() const override { return {{"engine", "full"}}; }
  /// WᵀW/N of students and teachers (students first).
  Eigen::MatrixXd gram() const { return W_.transpose() * W_ / static_cast<double>(N_); }
  Eigen::MatrixXd students() const { return W_.leftCols(s_.K); }  ///< N×K
  Eigen::MatrixXd teachers() const { return W_.rightCols(s_.M); }  ///< N×M
  const Eigen::VectorXd& second_layer() const { return v_; }
  const Config& setup() const { return s_; }

 private:
  // Where samples come from: the N inputs from a counter-based Gaussian stream (the bulk of the
  // numbers, rng::NormalStream), the label noise from an engine.
  struct SampleStreams {
    rng::NormalStream inputs;
    rng::Engine noise;
  };
  // The only code that reads the data: a fresh x, its fields u = Wᵀx/√N and the label noise.
  void draw_sample(SampleStreams& streams);
  void fields(const Eigen::VectorXd& x);
  // The only code that changes the weights: w_k ← α w_k + first[k] x/√N, v ← v + second/N.
  void apply_step(const Eigen::VectorXd& x);

  Config s_;
  int N_;
  double sqrtN_;
  std::uint64_t seed_, replica_;
  long test_size_;
  long steps_ = 0;
  StepRule rule_;
  Eigen::MatrixXd W_;  ///< N × (K + M): students w_k, then teachers w*_m (one product gives all fields)
  Eigen::VectorXd v_;  ///< the student's second layer
  SampleStreams data_, drift_;
  boost::random::normal_distribution<double> normal_;
  // Scratch of one step.
  Eigen::VectorXd x_, u_, first_, second_;
  double zeta_ = 0;
  std::vector<std::uint8_t> mask_;
  StepControls controls_;
};

/// Testing only: break the reduction, to see its tests fail (the orthogonal part of |x|² dropped,
/// or its degrees of freedom shifted from N − r).
struct Reduction {
  bool orthogonal_part = true;
  int dof_shift = 0;
};

/// The exact reduced simulator: the chain of C = WᵀW/N (and v), with the law of OnlineSGD's.
class ReducedSGD final : public FiniteSystem {
 public:
  /// One run at dimension N (any N ≥ 1; memory and time per step independent of N). The initial
  /// weights are OnlineSGD's (the same named streams: the same initial overlaps for a seed, built
  /// once at O(N (K + M))); the steps draw from the training stream.
  ReducedSGD(const Config& setup, int N, std::uint64_t seed, std::uint64_t replica, long test_size = 2000, Reduction reduction = {});
  /// From a given Gram matrix C (students first) and second layer v.
  ReducedSGD(const Config& setup, int N, const Eigen::MatrixXd& C, const Eigen::VectorXd& v, std::uint64_t seed, std::uint64_t replica,
             long test_size = 2000, Reduction reduction = {});
  double time() const override { return static_cast<double>(steps_) / N_; }
  void advance_to(double t) override;  ///< to steps = round(t N)
  Eigen::VectorXd state() const override;
  Observables observe() override { return observe_gram(s_, C_, v_, seed_, replica_, test_size_); }
  DriftTerms increment() override;
  nlohmann::json record() const override { return {{"engine", "reduced"}}; }
  void step();
  long steps() const { return steps_; }
  const Eigen::MatrixXd& gram() const { return C_; }
  const Eigen::VectorXd& second_layer() const { return v_; }

 private:
  // The only code that reads the data: u ~ N(0, C), x2 = |x|²/N, ζ.
  void draw_sample(rng::Engine& engine);
  Config s_;
  int N_;
  std::uint64_t seed_, replica_;
  long test_size_;
  Reduction reduction_;
  long steps_ = 0;
  StepRule rule_;
  Eigen::MatrixXd C_;
  Eigen::VectorXd v_;
  rng::Engine data_, drift_;
  boost::random::normal_distribution<double> normal_;
  Eigen::VectorXd z_, u_, first_, second_;
  Eigen::MatrixXd root_;
  double x2_ = 0, zeta_ = 0;
  std::vector<std::uint8_t> mask_;
  StepControls controls_;
};

}  // namespace hdat::committee
