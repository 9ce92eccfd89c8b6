#pragma once
// The exact reduced simulator of the specialization model (derivation.md, "The exact reduced
// simulator"; engine=reduced): the chain of the Gram matrix C = WᵀW/D of the p = H + 1 + F vectors
// (keys k_h, value v*, spikes K*), with the law of D-dimensional online SGD, at a cost per step that
// does not depend on D.
//
// A step sees its B·L tokens x only through (i) their coordinates y ~ N(0, I_r) in an orthonormal
// basis of span W (r = rank C; fields u = B_C y with B_C B_Cᵀ = C; the signal token adds the spikes'
// coordinates B_K*ᵀθ), and (ii) their Gram matrix x·x'/D = (y·y' + G⊥)/D, whose orthogonal part G⊥
// is Wishart with D − r degrees of freedom (Bartlett: one χ² per token and normals below the
// diagonal). With c_hℓ = (η/B) err Σ-weights of the step (Δk_h = (α_h − 1) k_h + Σ_ℓ c_hℓ x_ℓ/√D),
//   C'[h, j] = α_h C[h, j] + T[h, j]                     (j a fixed vector), T = c U/D,
//   C'[h, g] = α_h α_g C[h, g] + α_g T[h, g] + α_h T[g, h] + (c G cᵀ)[h, g]/D.
#include <Eigen/Dense>
#include <boost/random/normal_distribution.hpp>

#include "hdat/core/model.hpp"
#include "hdat/core/random.hpp"
#include "hdat/specialization/model.hpp"
#include "hdat/specialization/simulator.hpp"

namespace hdat::specialization {

/// Testing only: break the reduction (the orthogonal Wishart part dropped, or its degrees of freedom
/// shifted from D − r), to see its tests fail.
struct Reduction {
  bool orthogonal_part = true;
  int dof_shift = 0;
};

class ReducedOnlineSGD final : public FiniteSystem {
 public:
  /// One run at dimension D from the full engine's initial weights (the same named streams: the same
  /// initial overlaps for a seed); the steps draw from the training stream.
  ReducedOnlineSGD(const Config& setup, int D, std::uint64_t seed, std::uint64_t replica, TestOptions test = {},
                   Reduction reduction = {});
  void step();
  void advance_to(double t) override;
  long steps() const { return steps_; }
  double time() const override { return static_cast<double>(steps_) / D_; }
  Eigen::VectorXd state() const override;
  /// risk (projected test sequences: the law of D-dimensional ones) and the value overlaps v_h.
  Observables observe() override;
  /// The step's increment in the theory's terms ("eta", "eta2", "bias"), not applied.
  DriftTerms increment() override;
  nlohmann::json record() const override { return {{"engine", "reduced"}}; }
  const Eigen::MatrixXd& gram() const { return C_; }

 private:
  struct Step {
    Eigen::MatrixXd c;      ///< H × BL: Δk_h = (α_h − 1) k_h + Σ_ℓ c_hℓ x_ℓ/√D
    Eigen::VectorXd alpha;  ///< H: the κ decay of the keys
    Eigen::MatrixXd T;      ///< H × p: c U/D
    Eigen::MatrixXd cGc;    ///< H × H: c (x·x'/D) cᵀ
    Eigen::VectorXd db;     ///< the biases' change
  };
  // The only code that reads the data: B sequences' fields and token Gram matrix, and what the
  // step makes of them.
  Step draw_step(rng::Engine& engine);

  Config s_;
  TestOptions test_;
  Reduction reduction_;
  int D_;
  long steps_ = 0;
  std::uint64_t seed_, replica_;
  Eigen::MatrixXd C_;   ///< p × p: keys, v*, spikes
  Eigen::VectorXd b_;
  rng::Engine data_, drift_;
  boost::random::normal_distribution<double> normal_;
  Attention att_;
  Eigen::MatrixXd root_;
};

}  // namespace hdat::specialization
