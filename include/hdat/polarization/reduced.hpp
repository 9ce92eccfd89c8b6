#pragma once
// The flows of the model as ODE systems on flat state vectors (derivation.md §2, §3, §6).
//
//   ReducedLogistic  state (u, a), 2T numbers, any d:   du/dt = b γ s,            da/dt = ρ γ Jᵀ u
//   ReducedSquare    state (u, Q, a), T + T² + T:      du/dt = s (b − u·s),      dQ/dt = s wᵀ + w sᵀ,
//                                                       da/dt = ρ Jᵀ w,  w = u − Q s
//   FullFlow         state (V, a) or (U, a):            dV/dt = −∂L/∂V,           da/dt = −∂L/∂a
// with b = |β*|², γ = −ℓ'(z) = 1/(1 + e^z), z = u·s, J = ∂σ/∂a (Jᵀ u = C(s) u for softmax) and
// ρ = replicator_sign (+1 is the chain rule; −1 exists to show that the other sign disagrees with
// gradient descent).
#include <Eigen/Dense>
#include <memory>
#include <vector>

#include "hdat/core/integrate.hpp"
#include "hdat/core/layout.hpp"
#include "hdat/polarization/flow.hpp"
#include "hdat/polarization/full_model.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/observables.hpp"

namespace hdat::polarization {

class FlowSystem {
 public:
  virtual ~FlowSystem() = default;
  const StateLayout& layout() const { return layout_; }
  int size() const { return layout_.size(); }
  /// dx/dt at x. Not thread-safe (workspaces).
  virtual void rhs(const ConstVecRef& x, VecRef dx) = 0;
  virtual Eigen::VectorXd initial_state() const = 0;
  virtual Measured measure(const Eigen::VectorXd& x) = 0;
  /// Offset of the logits block a in the state (-1 when the logits are not a state block: tied).
  virtual int logits_offset() const = 0;
  FlowKind kind() const { return kind_; }
  /// The system as Odeint sees it.
  OdeSystem system();

 protected:
  StateLayout layout_;
  FlowKind kind_ = FlowKind::reduced;
};

class ReducedLogistic : public FlowSystem {
 public:
  ReducedLogistic(const Config& c, const Instance& in);
  void rhs(const ConstVecRef& x, VecRef dx) override;
  Eigen::VectorXd initial_state() const override;
  Measured measure(const Eigen::VectorXd& x) override;
  int logits_offset() const override { return T_; }

 private:
  int T_;
  double b_, rho_;
  Normalization norm_;
  Eigen::VectorXd u0_, a0_, col0_sq_;  // |V(0) e_j|², for the exact column norms
  double V0_sq_ = 0;                   // |V(0)|_F²
  Eigen::VectorXd s_, g_;
};

class ReducedSquare : public FlowSystem {
 public:
  ReducedSquare(const Config& c, const Instance& in);
  void rhs(const ConstVecRef& x, VecRef dx) override;
  Eigen::VectorXd initial_state() const override;
  Measured measure(const Eigen::VectorXd& x) override;
  int logits_offset() const override { return T_ + T_ * T_; }

 private:
  int T_;
  double b_, rho_;
  Normalization norm_;
  Eigen::VectorXd u0_, a0_;
  Eigen::MatrixXd Q0_;
  Eigen::VectorXd s_, w_, g_;
};

class FullFlow : public FlowSystem {
 public:
  FullFlow(const Config& c, const Instance& in);
  void rhs(const ConstVecRef& x, VecRef dx) override;
  Eigen::VectorXd initial_state() const override;
  Measured measure(const Eigen::VectorXd& x) override;
  int logits_offset() const override { return c_->architecture == Architecture::tied ? -1 : c_->d * c_->T; }

 private:
  const Config* c_;
  const Instance* in_;
  FullModel model_;
};

/// The flow `curve` integrates for this configuration (Config::flow).
std::unique_ptr<FlowSystem> make_flow(const Config& c, const Instance& in);

/// The event conditions of the configured normalisation on this flow's logits (derivation.md §8):
/// sum: a weight leaves / re-enters the simplex (report), F crosses 0 (stop); l1, relu,
/// elementwise_relu: a logit reaches 0 (freeze). None for softmax, square, sigmoid.
std::vector<EventCondition> event_conditions(const Config& c, const FlowSystem& flow);

/// Integration options of a configuration (stepper, tolerances, log time, component names).
IntegrateOptions integrate_options(const Config& c, const FlowSystem& flow);

}  // namespace hdat::polarization
