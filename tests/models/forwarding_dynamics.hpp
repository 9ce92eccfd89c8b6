#pragma once
// A dynamics model's Dynamics with hooks on what the harness builds: every call is forwarded to the
// model's own, and `on_theory` / `on_system` see each construction (the tests count them, or raise
// the interrupt flag at a chosen one).
#include <functional>
#include <memory>

#include "hdat/core/harness.hpp"
#include "hdat/core/verdict.hpp"

namespace hdat::testing {

class ForwardingDynamics final : public Dynamics {
 public:
  ForwardingDynamics(std::unique_ptr<const Dynamics> inner, std::function<void()> on_theory, std::function<void()> on_system)
      : inner_(std::move(inner)), on_theory_(std::move(on_theory)), on_system_(std::move(on_system)) {}
  DynamicsSettings settings() const override { return inner_->settings(); }
  StateLayout layout() const override { return inner_->layout(); }
  std::unique_ptr<OdeTheory> theory(int replica) const override {
    if (on_theory_) on_theory_();
    return inner_->theory(replica);
  }
  Eigen::VectorXd initial_state(const OdeTheory& theory) const override { return inner_->initial_state(theory); }
  std::unique_ptr<FiniteSystem> system(double size, std::uint64_t replica) const override {
    if (on_system_) on_system_();
    return inner_->system(size, replica);
  }
  std::vector<EventFunction> events() const override { return inner_->events(); }
  std::optional<Eigen::VectorXd> replica_initial_state(std::uint64_t replica) const override { return inner_->replica_initial_state(replica); }
  std::string describe() const override { return inner_->describe(); }
  void finish(const Bound& bound, const Computed& computed, RunOutput& out, Verdict& verdict) const override {
    inner_->finish(bound, computed, out, verdict);
  }
  std::unique_ptr<ControlledTheory> controlled(int replica) const override { return inner_->controlled(replica); }

 private:
  std::unique_ptr<const Dynamics> inner_;
  std::function<void()> on_theory_, on_system_;
};

/// `model` with every binding wrapped: `on_bind` sees each, the hooks each construction.
inline DynamicsModel forwarding(const DynamicsModel& model, std::function<void()> on_bind, std::function<void()> on_theory,
                                std::function<void()> on_system) {
  DynamicsModel m = model;
  m.bind = [inner = model.bind, on_bind, on_theory, on_system](const Params& p) -> std::unique_ptr<const Dynamics> {
    if (on_bind) on_bind();
    return std::make_unique<const ForwardingDynamics>(inner(p), on_theory, on_system);
  };
  return m;
}

}  // namespace hdat::testing
