#pragma once
// The polarization theory through the core contract (hdat/core/model.hpp): the flow of the
// configuration (reduced in (u, a) / (u, a, Q) where it exists, else the full (a, V) flow) as an
// OdeTheory, integrated by run_flow with the normalisation's events (flow.hpp) in log time.
//
// observe() returns what validate compares with gradient descent besides the blocks: the loss and
// |V|, both recovered from the reduced state by exact identities; a run's table lists every
// observable of the spec (observables.hpp) with the blocks in the spec's column order.
#include <memory>

#include "hdat/core/model.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/reduced.hpp"

namespace hdat::polarization {

/// The observables validate compares (the blocks besides): loss, V_norm.
Observables compared_observables(const Observables& all);

class FlowTheory : public OdeTheory {
 public:
  explicit FlowTheory(const Config& c);
  const StateLayout& layout() const override { return flow_->layout(); }
  void operator()(const ConstVecRef& x, VecRef dxdt, double t) const override;
  Observables observe(const Eigen::VectorXd& x, double t) const override;
  /// Every observable of the table at (x, t), with the blocks' place.
  Observables table_observables(const Eigen::VectorXd& x, double t) const;
  /// The flow with its events (run_flow) through `times`; info: "flow", "solver", "events".
  TheoryRun run(const Eigen::VectorXd& x0, const std::vector<double>& times, const IntegrateOptions& options) const override;

  const Config& config() const { return config_; }
  const Instance& instance() const { return instance_; }
  const FlowSystem& flow() const { return *flow_; }

 private:
  Config config_;
  Instance instance_;
  std::unique_ptr<FlowSystem> flow_;  // refers to config_ and instance_
};

}  // namespace hdat::polarization
