#include "hdat/specialization/declaration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hdat/core/harness.hpp"
#include "hdat/specialization/controlled.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/ode.hpp"
#include "hdat/specialization/reduced.hpp"
#include "hdat/specialization/simulator.hpp"

namespace hdat::specialization {

namespace {

DynamicsSettings settings_from(const Params& p) {
  const Setup s = setup_from(p);
  DynamicsSettings d;
  d.times = observation_times(p);
  d.integrate = integrate_options(p, s.layout());
  d.size_name = "D";
  d.simulate_size = s.D;
  for (long D : p.int_vector("dims")) d.validate_sizes.push_back(static_cast<double>(D));
  d.gap_exponent_expected = -0.5;
  d.seeds = static_cast<int>(p.integer("seeds"));
  d.seed = s.seed;
  d.theory_replicas = static_cast<int>(p.integer("theory_replicas"));
  d.false_alarm = p.real("false_alarm");
  d.detectable = p.real("detectable");
  d.rel_tolerance = p.real("rel_tolerance");
  d.t_compare = p.real("t_compare");
  const Eigen::VectorXd dt = p.vector("drift_times");
  d.drift_times.assign(dt.data(), dt.data() + dt.size());
  d.drift_samples = p.integer("drift_samples");
  d.drift_size = d.validate_sizes.empty() ? d.simulate_size : d.validate_sizes.back();  // empty dims: validate refuses
  return d;
}

std::string describe(const Params& p) {
  const Setup s = setup_from(p);
  std::string bias;
  if (s.train_bias) bias = fmt::format(", b trained (eta_bias={}, from [{}])", s.eta_bias, fmt::join(s.bias.data(), s.bias.data() + s.bias.size(), ", "));
  else if (p.has("bias")) bias = fmt::format(", b=[{}]", fmt::join(s.bias.data(), s.bias.data() + s.bias.size(), ", "));
  const std::string aggregation = s.activation == Activation::bayes ? "" : (s.aggregation == Aggregation::mean ? ", mean aggregation" : ", sum aggregation");
  return fmt::format("{}{}{}, L={}, H={}, F={}, eta={}, {} prior", activation_name(s.activation), aggregation, bias, s.L, s.H, s.F, s.eta,
                     p.text("prior.kind"));
}

}  // namespace

void finish_command(const Params& p, const std::string& command, RunOutput& out) {
  if (command == "curve") add_curve_results(p, out);
  if (command == "simulate") {
    const Setup s = setup_from(p);
    const auto seeds = static_cast<std::uint64_t>(p.integer("seeds"));
    auto& sim = out.info["simulation"];
    sim["seed_replicas"] = fmt::format("seed {}, replicas 0..{}: teacher (seed, k, 2), init (seed, k, 3), data (seed, k, 4), test set (seed, k, 5)",
                                       s.seed, seeds - 1);
    sim["test_size"] = p.integer("test_size");
    sim["steps_per_seed"] = std::lround(observation_times(p).back() * s.D);
  }
}

std::shared_ptr<const DynamicsModel> dynamics_model() {
  static const std::shared_ptr<const DynamicsModel> model = [] {
    auto m = std::make_shared<DynamicsModel>();
    m->theory = [](const Params& p, int replica) -> std::unique_ptr<OdeTheory> {
      FlowOptions o = flow_options(p, 0);
      o.replica = static_cast<std::uint64_t>(replica);
      return std::make_unique<OrderParameterFlow>(setup_from(p), o);
    };
    m->initial_state = [](const Params& p, const OdeTheory&) {
      const Setup s = setup_from(p);
      Eigen::MatrixXd M0, R0;
      initial_overlaps(p, s, M0, R0);
      return pack_state(s, M0, R0);
    };
    m->system = [](const Params& p, double size, std::uint64_t replica) -> std::unique_ptr<FiniteSystem> {
      Setup s = setup_from(p);
      s.D = static_cast<int>(size);
      TestOptions test{p.integer("test_size"), p.text("test_mode") == "projected"};
      if (p.text("engine") == "full") return std::make_unique<OnlineSGD>(s, s.D, s.seed, replica, test);
      return std::make_unique<ReducedOnlineSGD>(s, s.D, s.seed, replica, test);
    };
    m->settings = settings_from;
    // `curve` starts by default from the seeds' mean of these (start=mean), the overlaps of the
    // finite run's initial weights: the same for both engines (the reduced chain starts from OnlineSGD's Gram matrix).
    m->replica_initial_state = [](const Params& p, std::uint64_t replica) {
      const Setup s = setup_from(p);
      return OnlineSGD(s, s.D, s.seed, replica, TestOptions{}).state();
    };
    m->start_keys = {"M0", "R0"};
    m->events = [](const Params& p) {
      return specialization_events(static_cast<int>(p.integer("H")), static_cast<int>(p.integer("F")), p.real("split_threshold"));
    };
    m->escape_event = "plateau_end";
    m->theory_only_keys = {"mc_samples", "sampling", "t_relax", "compare", "stages", "prune", "split_threshold", "M0", "R0", "asymmetry"};
    m->describe = describe;
    m->finish = finish_command;
    m->controlled = [](const Params& p) -> std::unique_ptr<ControlledTheory> {
      return std::make_unique<SpecializationControlled>(setup_from(p), flow_options(p, 0));
    };
    return m;
  }();
  return model;
}

}  // namespace hdat::specialization
