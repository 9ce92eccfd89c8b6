#include "hdat/specialization/declaration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <optional>

#include "hdat/core/harness.hpp"
#include "hdat/core/verdict.hpp"
#include "hdat/specialization/controlled.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/ode.hpp"
#include "hdat/specialization/reduced.hpp"
#include "hdat/specialization/simulator.hpp"

namespace hdat::specialization {

namespace {

// The specialization model at one configuration: the parameters parsed once into its Config.
class Specialization final : public Dynamics {
 public:
  explicit Specialization(const Params& p)
      : p_(p),
        config_(Config::from(p)),
        flow_(flow_options(p, 0)),
        test_{p.integer("test_size"), p.text("test_mode") == "projected"},
        full_engine_(p.text("engine") == "full"),
        settings_(settings_from(p, config_)) {}

  DynamicsSettings settings() const override { return settings_; }
  StateLayout layout() const override { return config_.layout(); }
  std::unique_ptr<OdeTheory> theory(int replica) const override {
    FlowOptions o = flow_;
    o.replica = static_cast<std::uint64_t>(replica);
    return std::make_unique<OrderParameterFlow>(config_, o);
  }
  Eigen::VectorXd initial_state(const OdeTheory&) const override {
    Eigen::MatrixXd M0, R0;
    initial_overlaps(p_, config_, M0, R0);
    return pack_state(config_, M0, R0);
  }
  // `curve` starts by default from the seeds' mean of these (start=mean), the overlaps of the
  // finite run's initial weights: the same for both engines (the reduced chain starts from OnlineSGD's Gram matrix).
  std::optional<Eigen::VectorXd> replica_initial_state(std::uint64_t replica) const override {
    return OnlineSGD(config_, config_.D, config_.seed, replica, TestOptions{}).state();
  }
  std::unique_ptr<FiniteSystem> system(double size, std::uint64_t replica) const override {
    Config s = config_;
    s.D = static_cast<int>(size);
    if (full_engine_) return std::make_unique<OnlineSGD>(s, s.D, s.seed, replica, test_);
    return std::make_unique<ReducedOnlineSGD>(s, s.D, s.seed, replica, test_);
  }
  std::vector<EventFunction> events() const override { return specialization_events(config_.H, config_.F, p_.real("split_threshold")); }
  std::string describe() const override {
    const Config& s = config_;
    std::string bias;
    if (s.train_bias) bias = fmt::format(", b trained (eta_bias={}, from [{}])", s.eta_bias, fmt::join(s.bias.data(), s.bias.data() + s.bias.size(), ", "));
    else if (p_.has("bias")) bias = fmt::format(", b=[{}]", fmt::join(s.bias.data(), s.bias.data() + s.bias.size(), ", "));
    const std::string aggregation = s.activation == Activation::bayes ? "" : (s.aggregation == Aggregation::mean ? ", mean aggregation" : ", sum aggregation");
    return fmt::format("{}{}{}, L={}, H={}, F={}, eta={}, {} prior", activation_name(s.activation), aggregation, bias, s.L, s.H, s.F, s.eta,
                       p_.text("prior.kind"));
  }
  void finish(const Bound& bound, const Computed& computed, RunOutput& out, Verdict&) const override {
    if (computed.curve) {
      const auto& flow = dynamic_cast<const OrderParameterFlow&>(bound.theory(0));
      add_curve_results(config_, curve_results(p_, config_, flow, *computed.curve), *computed.curve, out);
    }
    if (computed.simulation) {
      auto& sim = out.info["simulation"];
      sim["seed_replicas"] = fmt::format("seed {}, replicas 0..{}: teacher (seed, k, 2), init (seed, k, 3), data (seed, k, 4), test set (seed, k, 5)",
                                         config_.seed, settings_.seeds - 1);
      sim["test_size"] = test_.size;
      sim["steps_per_seed"] = std::lround(settings_.times.back() * config_.D);
    }
  }
  std::unique_ptr<ControlledTheory> controlled(int replica) const override {
    FlowOptions o = flow_;
    o.replica = static_cast<std::uint64_t>(replica);
    return std::make_unique<SpecializationControlled>(config_, o);
  }

 private:
  // The standard keys' settings; the theory's integration stops at a blow-up of the overlaps.
  static DynamicsSettings settings_from(const Params& p, const Config& s) {
    DynamicsSettings d = standard_settings(p, standard_defaults(), s.layout());
    d.integrate.divergence = 1e6;  // overlaps of unit-scale spikes: anything this large is a blow-up
    return d;
  }

  Params p_;
  Config config_;
  FlowOptions flow_;
  TestOptions test_;
  bool full_engine_;
  DynamicsSettings settings_;
};

}  // namespace

std::shared_ptr<const DynamicsModel> dynamics_model() {
  static const std::shared_ptr<const DynamicsModel> model = [] {
    auto m = std::make_shared<DynamicsModel>();
    m->bind = dynamics_of<Specialization>();
    m->start_keys = {"M0", "R0"};
    m->escape_event = "plateau_end";
    return m;
  }();
  return model;
}

}  // namespace hdat::specialization
