#include "hdat/polarization/declaration.hpp"
#include "hdat/core/exit_code.hpp"

#include <fmt/format.h>

#include <cmath>

#include "hdat/core/harness.hpp"
#include "hdat/core/verdict.hpp"
#include "hdat/polarization/curve.hpp"
#include "hdat/polarization/gd.hpp"
#include "hdat/polarization/reduced.hpp"
#include "hdat/polarization/theory.hpp"

namespace hdat::polarization {

namespace {

DynamicsSettings settings_from(const Config& c, const FlowSystem& flow) {
  DynamicsSettings d;
  d.curve_times = c.times;
  d.times = on_step_grid(c.times, c.lr);  // whole multiples of the largest step: every step size meets the flow there
  d.integrate = integrate_options(c, flow);
  d.size_name = "lr";
  d.simulate_size = c.lr;
  for (int k = 0; k <= c.halvings; ++k) d.validate_sizes.push_back(std::ldexp(c.lr, -k));
  d.gap_exponent_expected = 1;  // the explicit Euler scheme of the flow: first order
  d.seeds = 1;                  // deterministic: one run per step, no standard errors
  d.seed = c.seed;
  d.theory_replicas = 1;
  d.deterministic = true;
  d.rel_tolerance = d.abs_tolerance = c.tolerance;  // |Δ| <= tolerance (1 + scale(block))
  d.judge_every_size = false;                       // the O(η) gap is judged at the smallest step ...
  d.min_order = c.min_order;                        // ... and must shrink with η at every halving
  d.drift_times = c.drift_times;
  d.drift_samples = 2;  // the increment of a step is exact: nothing to average
  d.drift_size = d.validate_sizes.back();
  d.drift_abs_tolerance = 1e-8;  // round-off of (x(η) − x(0))/η
  d.parallel_seeds = false;
  return d;
}

std::string describe(const Config& c) {
  return fmt::format("{} loss, {}{}, {} flow, T={}, d={}", name(c.loss), name(c.normalization),
                     c.architecture == Architecture::tied ? ", tied U σ(U a)" : "", name(c.flow), c.T, c.d);
}

// A table without the standard-error columns of its values (a deterministic run's are all zero).
Table without_standard_errors(const Table& t) {
  std::vector<std::string> keep;
  for (const auto& c : t.columns()) {
    const bool se = c.size() > 3 && c.compare(c.size() - 3, 3, "_se") == 0 && t.has_column(c.substr(0, c.size() - 3));
    if (!se) keep.push_back(c);
  }
  Table out(keep);
  for (std::size_t r = 0; r < t.rows(); ++r) {
    std::vector<double> row;
    for (const auto& c : keep) row.push_back(t.number(r, c));
    out.add_row(row);
  }
  return out;
}

std::string last_row_line(const Trajectory& run, bool theory) {
  if (run.empty()) return "";
  const std::size_t L = run.size() - 1;
  const auto at = [&](const char* name) { return run.observed(L, name).value; };
  const double eps = at("one_minus_s_top");
  std::string s = fmt::format("  at t = {:g}: top token {}, s_top = {:.10g}", run.t(L), static_cast<int>(at("top")), 1 - eps);
  if (theory) s += fmt::format(", 1 − s_top = {:.4g}", eps);
  s += fmt::format(", loss = {:.4g}", at("loss"));
  if (theory) s += fmt::format(", z − log t = {:.4g}", at("z_minus_logt"));
  return s + "\n";
}

void finish_curve(const Config& c, const Instance& in, const TheoryRun& run, RunOutput& out) {
  const Trajectory& curve = run.trajectory;
  out.info["instance"] = in.record(c);
  if (!curve.empty()) {
    const std::size_t L = curve.size() - 1;
    const auto at = [&](const char* name) { return curve.observed(L, name).value; };
    const nlohmann::json limits = asymptotics(c, in, {curve.t(L), at("top"), at("eps_log2t"), at("z_minus_logt")});
    if (!limits.is_null()) out.info["asymptotics"] = limits;
  }
  out.summary += last_row_line(curve, true);
  for (const auto& e : out.info["events"])
    out.summary += fmt::format("  event at t = {:.10g}: {} ({})\n", e["t"].get<double>(), e["message"].get<std::string>(), e["action"].get<std::string>());
}

void finish_simulate(const Config& c, const Instance& in, const Ensemble& ens, RunOutput& out) {
  // The folder's sim.csv without the standard errors of a deterministic run (all zero).
  Table& sim = out.tables.at("sim.csv");
  sim = without_standard_errors(sim);
  out.info["instance"] = in.record(c);
  if (ens.records.empty() || ens.records.front().empty()) return;
  const nlohmann::json& run = ens.records.front();
  out.info["events"] = run["events"];
  out.summary += fmt::format("  gradient descent: {} steps in {:.3f} s ({:.3g} steps/s)\n", run["steps"].get<long>(), run["wall_seconds"].get<double>(),
                             run["steps_per_second"].get<double>());
  out.summary += last_row_line(ens.mean, false);
  out.summary += "  invariants: " + run["invariants"].dump() + "\n";
  for (const auto& f : run["identity_failures"]) out.summary += "  identity FAILS: " + f.get<std::string>() + "\n";
  if (!run["finite"].get<bool>()) {
    out.exit_code = code(ExitCode::numerical_failure);
    out.summary += "  numerical failure: the state became non-finite (rows after it are NaN)\n";
  }
}

// validate (trajectories) also checks the drift; its failing overrules the harness's verdict. (The
// identities of every step are the runs' own checks, GradientDescent::failed_checks, which the
// harness judges.)
void finish_validate(const Bound& bound, const Config& c, const TrajectoryValidation& validation, RunOutput& out, Verdict& verdict) {
  nlohmann::json& v = out.info["validation"];

  RunContext quiet;
  quiet.quiet = true;
  DriftValidation drift = validate_drift(bound, quiet);
  out.tables["drift.csv"] = std::move(drift.rows);
  v["drift"] = drift.record;
  out.summary += fmt::format("  drift check at t = {} (lr = {:g}): one step against the flow's right-hand side\n", nlohmann::json(c.drift_times).dump(),
                             bound.settings().drift_size) +
                 drift.summary;
  out.tables["convergence.csv"] = convergence_table(validation);
  if (drift.verdict.kind != VerdictKind::agree) {
    verdict.merge(Verdict::disagree("the drift check fails (see the summary)"));
    out.summary += "  verdict: DISAGREE (drift check)\n";
  }
}

}  // namespace

Table convergence_table(const TrajectoryValidation& v) {
  std::vector<std::string> cols = {"lr"};
  for (const auto& [b, gaps] : v.gap_rms) cols.push_back("gap_" + b);
  for (const auto& [b, gaps] : v.gap_rms) cols.push_back("order_" + b);
  Table t(cols);
  for (std::size_t k = 0; k < v.sizes.size(); ++k) {
    std::vector<double> row = {v.sizes[k]};
    for (const auto& [b, gaps] : v.gap_rms) row.push_back(gaps[k]);
    for (const auto& [b, gaps] : v.gap_rms) row.push_back(k == 0 ? std::nan("") : v.gap_order.at(b)[k - 1]);
    t.add_row(row);
  }
  return t;
}

namespace {

// Polarization at one configuration: the parameters parsed once into its Config and its instance.
class Polarization final : public Dynamics {
 public:
  explicit Polarization(const Params& p)
      : config_(Config::from(p)), instance_(make_instance(config_)), flow_(make_flow(config_, instance_)) {}

  DynamicsSettings settings() const override { return settings_from(config_, *flow_); }
  StateLayout layout() const override { return flow_->layout(); }
  // Deterministic: no sample sets (replica) and one run per step (the seed only draws the instance).
  std::unique_ptr<OdeTheory> theory(int) const override { return std::make_unique<FlowTheory>(config_); }
  Eigen::VectorXd initial_state(const OdeTheory& theory) const override { return dynamic_cast<const FlowTheory&>(theory).flow().initial_state(); }
  std::unique_ptr<FiniteSystem> system(double lr, std::uint64_t) const override { return std::make_unique<GradientDescent>(config_, instance_, lr); }
  std::string describe() const override { return polarization::describe(config_); }
  const Config& config() const { return config_; }
  void finish(const Bound& bound, const Computed& computed, RunOutput& out, Verdict& verdict) const override {
    if (computed.curve) finish_curve(config_, instance_, *computed.curve, out);
    if (computed.simulation) finish_simulate(config_, instance_, *computed.simulation, out);
    if (computed.validation || computed.drift) out.info["instance"] = instance_.record(config_);
    if (computed.validation) finish_validate(bound, config_, *computed.validation, out, verdict);
  }

 private:
  Config config_;
  Instance instance_;
  std::unique_ptr<FlowSystem> flow_;  // the theory's blocks; refers to config_ and instance_
};

}  // namespace

std::shared_ptr<const DynamicsModel> dynamics_model() {
  static const std::shared_ptr<const DynamicsModel> model = [] {
    auto m = std::make_shared<DynamicsModel>();
    m->bind = dynamics_of<Polarization>();
    return m;
  }();
  return model;
}

Config bound_config(const Params& p) {
  if (const auto bound = p.binding<Bound>())
    if (const auto* model = dynamic_cast<const Polarization*>(&bound->dynamics())) return model->config();
  return Config::from(p);
}

}  // namespace hdat::polarization
