#pragma once
// The flows of the model as ODE systems on flat state vectors with named blocks (derivation.md §2,
// §3, §6).
//
//   ReducedLogistic  blocks (u, a), 2T numbers, any d:   du/dt = b γ s,            da/dt = ρ γ Jᵀ u
//   ReducedSquare    blocks (u, a, Q), T + T + T²:       du/dt = s (b − u·s),      dQ/dt = s wᵀ + w sᵀ,
//                                                         da/dt = ρ Jᵀ w,  w = u − Q s
//   FullFlow         blocks (a, V) or (a, U):            dV/dt = −∂L/∂V,           da/dt = −ρ ∂L/∂a
// with b = |β*|², γ = −ℓ'(z) = 1/(1 + e^z), z = u·s, J = ∂σ/∂a (Jᵀ u = C(s) u for softmax) and
// ρ = Config::replicator_sign (+1 is the chain rule; −1, the test-only break_term=replicator_sign,
// exists to show that the other sign disagrees with gradient descent).
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

/// One flow of the model. Evaluations use internal workspaces: one object serves one thread.
class FlowSystem {
 public:
  virtual ~FlowSystem() = default;
  const StateLayout& layout() const { return layout_; }
  int size() const { return layout_.size(); }
  /// dx/dt at x.
  virtual void rhs(const ConstVecRef& x, VecRef dx) const = 0;
  /// The state of the instance's initial parameters (u(0), Q(0) as given for init=explicit).
  virtual Eigen::VectorXd initial_state() const = 0;
  /// The state of given weights (V or U, a): what gradient descent measures.
  virtual Eigen::VectorXd state_of(const Eigen::MatrixXd& V, const Eigen::VectorXd& a) const = 0;
  virtual Measurement measure(const Eigen::VectorXd& x) const = 0;
  /// Offset of the logits block a in the state (-1 when the logits are not a block: tied, logits = U a).
  virtual int logits_offset() const = 0;
  FlowKind kind() const { return kind_; }
  /// The system as Odeint sees it (refers to this object).
  OdeSystem system() const;

 protected:
  StateLayout layout_;
  FlowKind kind_ = FlowKind::reduced;
};

class ReducedLogistic : public FlowSystem {
 public:
  ReducedLogistic(const Config& c, const Instance& in);
  void rhs(const ConstVecRef& x, VecRef dx) const override;
  Eigen::VectorXd initial_state() const override;
  Eigen::VectorXd state_of(const Eigen::MatrixXd& V, const Eigen::VectorXd& a) const override;
  Measurement measure(const Eigen::VectorXd& x) const override;
  int logits_offset() const override { return layout_.block("a").offset; }

 private:
  int T_;
  double b_, rho_;
  Normalization norm_;
  Eigen::VectorXd beta_star_, u0_, a0_, col0_sq_;  // col0_sq_: |V(0) e_j|², for the exact column norms
  double V0_sq_ = 0;                               // |V(0)|_F²
  mutable Eigen::VectorXd s_, g_;                  // workspaces
};

class ReducedSquare : public FlowSystem {
 public:
  ReducedSquare(const Config& c, const Instance& in);
  void rhs(const ConstVecRef& x, VecRef dx) const override;
  Eigen::VectorXd initial_state() const override;
  Eigen::VectorXd state_of(const Eigen::MatrixXd& V, const Eigen::VectorXd& a) const override;
  Measurement measure(const Eigen::VectorXd& x) const override;
  int logits_offset() const override { return layout_.block("a").offset; }

 private:
  int T_;
  double b_, rho_;
  Normalization norm_;
  Eigen::VectorXd beta_star_, u0_, a0_;
  Eigen::MatrixXd Q0_;
  mutable Eigen::VectorXd s_, w_, g_;  // workspaces
};

class FullFlow : public FlowSystem {
 public:
  FullFlow(const Config& c, const Instance& in);
  void rhs(const ConstVecRef& x, VecRef dx) const override;
  Eigen::VectorXd initial_state() const override;
  Eigen::VectorXd state_of(const Eigen::MatrixXd& V, const Eigen::VectorXd& a) const override;
  Measurement measure(const Eigen::VectorXd& x) const override;
  int logits_offset() const override { return c_->architecture == Architecture::tied ? -1 : layout_.block("a").offset; }

 private:
  const std::string& weights_name() const;  // "V" or "U"
  const Config* c_;
  const Instance* in_;
  double rho_;
  mutable FullModel model_;  // its evaluation buffers are workspaces
};

/// The flow `curve` integrates for this configuration (Config::flow). It refers to c and in.
std::unique_ptr<FlowSystem> make_flow(const Config& c, const Instance& in);

/// The event conditions of the configured normalisation on this flow's logits (derivation.md §8):
/// sum: a weight leaves / re-enters the simplex (report), F crosses 0 (stop); l1, relu,
/// elementwise_relu: a logit reaches 0 (freeze). None for softmax, square, sigmoid.
std::vector<EventCondition> event_conditions(const Config& c, const FlowSystem& flow);

/// Integration options of a configuration (stepper, tolerances, log time, component names).
IntegrateOptions integrate_options(const Config& c, const FlowSystem& flow);

}  // namespace hdat::polarization
