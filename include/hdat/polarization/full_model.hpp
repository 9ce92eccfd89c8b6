#pragma once
// The full-parameter model: the loss L(V, a) of β = V σ(a) (or β = U σ(U a)) and its exact gradient
// (derivation.md §1, §6). Gradient descent (validation/) steps along −∇L; the full gradient flow
// dV/dt = −∂L/∂V, da/dt = −∂L/∂a is the theory where no closed reduction exists (regression, xent,
// tied) and the reference the reductions are checked against.
#include <Eigen/Dense>

#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/normalization.hpp"
#include "hdat/polarization/observables.hpp"

namespace hdat::polarization {

using ConstMat = Eigen::Ref<const Eigen::MatrixXd>;
using Mat = Eigen::Ref<Eigen::MatrixXd>;

/// ℓ(β) of the configured loss; writes g = ∂ℓ/∂β.
double output_loss(Loss loss, const Instance& in, const ConstVec& beta, Vec g);

class FullModel {
 public:
  FullModel(const Config& c, const Instance& in);

  /// L at (V, a) (V is U for the tied model); fills the quantities below. When gV / ga are given,
  /// writes ∂L/∂V and ∂L/∂a into them.
  double evaluate(const ConstMat& V, const ConstVec& a, Mat* gV = nullptr, Vec* ga = nullptr);
  /// The observables of the weights (V, a): evaluate, then u = Vᵀb, |V|, column norms (and Q = VᵀV
  /// where the configuration lists it).
  Measurement measure(const ConstMat& V, const ConstVec& a);

  // After evaluate():
  const Eigen::VectorXd& logits() const { return logits_; }  ///< a (value) or U a (tied)
  const Eigen::VectorXd& weights() const { return s_; }      ///< s = σ(logits)
  const Eigen::VectorXd& output() const { return beta_; }    ///< β
  double normaliser() const { return F_; }
  double loss() const { return loss_; }

  const Config& config() const { return *c_; }
  const Instance& instance() const { return *in_; }

 private:
  const Config* c_;
  const Instance* in_;
  Eigen::VectorXd logits_, s_, beta_, g_beta_, g_s_, g_logits_;
  double F_ = 0, loss_ = 0;
};

}  // namespace hdat::polarization
