// How often validate binds a dynamics model and builds a theory and a finite system: the property of
// issue 33 ("bound once"). A validate binds the model once (the parameters parsed once into the
// model's Config, the settings read once), builds one theory per replica it integrates (replica k
// of a sampled theory is paired with seed k) and one system per run it makes (a seed at a size, or
// the drift check's run); anything more would be built only to learn a layout or column names, or
// rebuilt for each size.
//
// Each binding of the model is wrapped (forwarding_dynamics.hpp) so that its theories and systems
// are counted, and validate runs on the wrapped model at small settings. Before issue 33 the
// trajectory cases failed (a theory per size and three more per ensemble for layouts and names, a
// probe system per size, the settings read twice); tools/count_calls.py measures the same on the
// program.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "../quiet_context.hpp"
#include "forwarding_dynamics.hpp"
#include "hdat/committee/declaration.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/polarization/declaration.hpp"
#include "hdat/specialization/declaration.hpp"

using namespace hdat;

namespace {

struct Calls {
  std::atomic<int> binds{0}, theories{0}, systems{0};
};

// The model with its bindings, theories and systems counted (systems are built in parallel threads).
DynamicsModel counting(const DynamicsModel& model, Calls& calls) {
  return testing::forwarding(model, [&calls] { ++calls.binds; }, [&calls] { ++calls.theories; }, [&calls] { ++calls.systems; });
}

Params resolved(const std::string& name, const nlohmann::json& settings) {
  register_models();
  std::vector<std::pair<std::string, nlohmann::json>> sets;
  for (const auto& [key, value] : settings.items()) sets.emplace_back(key, value);
  return resolve_for(registry().get(name), nlohmann::json(), sets);
}

struct Expected {
  int theories = 0, systems = 0;
};

// validate on the counting model; the calls it made against what the run needs.
void check_validate(const std::string& name, const DynamicsModel& model, const nlohmann::json& settings, bool drift) {
  nlohmann::json with_mode = settings;
  with_mode["mode"] = drift ? "drift" : "trajectory";
  const Params p = resolved(name, with_mode);
  const DynamicsSettings s = Bound(model, p).settings();
  // Trajectory: one run per seed and size, and the drift check's run where the model's validate
  // also checks the drift (polarization); theories: replicas 0..R-1, and 0..seeds-1 where each seed
  // is paired with its own sample set (R > 1).
  const int replicas = s.theory_replicas > 1 ? std::max(s.theory_replicas, s.seeds) : 1;
  const int drift_run = name == "polarization" ? 1 : 0;
  const Expected need = drift ? Expected{1, 1}
                              : Expected{replicas, static_cast<int>(s.validate_sizes.size()) * s.seeds + drift_run};
  Calls calls;
  const DynamicsModel counted = counting(model, calls);
  RunContext ctx = quiet_context();
  const RunOutput out = dynamics_validate(counted, p, ctx);
  const int theories = calls.theories, systems = calls.systems, binds = calls.binds;
  const std::string what = fmt::format("{} validate mode={}: {} theories ({} needed), {} systems ({} needed), bound {} times", name,
                                       drift ? "drift" : "trajectory", theories, need.theories, systems, need.systems, binds);
  CAPTURE(what);
  MESSAGE(what);
  REQUIRE(out.exit_code != 130);
  CHECK(theories == need.theories);
  CHECK(systems == need.systems);
  CHECK(binds == 1);
}

const nlohmann::json committee_settings = {{"N", 200}, {"dims", {100, 200}}, {"seeds", 3},          {"t_max", 10.0},
                                           {"n_points", 4}, {"test_size", 100}, {"drift_samples", 50}, {"drift_times", {0.0}}};
const nlohmann::json specialization_settings = {{"D", 200},         {"dims", {100, 200}}, {"seeds", 2},         {"t_max", 2.0},
                                                {"n_points", 4},    {"mc_samples", 500},  {"test_size", 100},   {"theory_replicas", 2}};
const nlohmann::json specialization_drift_settings = {{"D", 200}, {"dims", {100, 200}}, {"mc_samples", 500}, {"drift_samples", 50},
                                                      {"drift_times", {0.0}}};
const nlohmann::json polarization_settings = {{"t_max", 10.0}, {"points", 6}, {"figures", false}, {"drift_times", {0.0}}};

}  // namespace

TEST_CASE("validate mode=drift binds once and builds one theory and one system") {
  check_validate("committee", *committee::dynamics_model(), committee_settings, true);
  check_validate("specialization", *specialization::dynamics_model(), specialization_drift_settings, true);
  check_validate("polarization", *polarization::dynamics_model(), polarization_settings, true);
}

TEST_CASE("committee: validate builds each theory once per replica and each system once per run") {
  nlohmann::json s = committee_settings;
  s.erase("drift_samples"), s.erase("drift_times");
  check_validate("committee", *committee::dynamics_model(), s, false);
}

TEST_CASE("specialization: validate builds each theory once per replica and each system once per run") {
  check_validate("specialization", *specialization::dynamics_model(), specialization_settings, false);
}

TEST_CASE("polarization: validate builds each theory once per replica and each system once per run") {
  check_validate("polarization", *polarization::dynamics_model(), polarization_settings, false);
}

// A finite system that throws in one seed (a model's error) reaches the caller as that exception, not
// as a terminated process: exceptions must not escape the harness's parallel loop of seeds.
TEST_CASE("a seed whose system throws: the exception reaches the caller") {
  const Params p = resolved("committee", {{"N", 100}, {"seeds", 4}, {"t_max", 1.0}, {"n_points", 3}, {"test_size", 50}});
  auto built = std::make_shared<std::atomic<int>>(0);
  const DynamicsModel failing = testing::forwarding(*committee::dynamics_model(), nullptr, nullptr, [built] {
    if (++*built == 3) throw std::runtime_error("the third seed's system fails");
  });
  for (int threads : {1, 2}) {
    RunContext ctx = quiet_context(threads);
    CHECK_THROWS_WITH_AS(dynamics_simulate(failing, p, ctx), "the third seed's system fails", std::runtime_error);
    *built = 0;
  }
}

namespace {

// A committee run whose own checks report `failures` (FiniteSystem::failed_checks).
class CheckedSystem final : public FiniteSystem {
 public:
  CheckedSystem(std::unique_ptr<FiniteSystem> inner, std::vector<std::string> failures) : inner_(std::move(inner)), failures_(std::move(failures)) {}
  double time() const override { return inner_->time(); }
  void advance_to(double t) override { inner_->advance_to(t); }
  Eigen::VectorXd state() const override { return inner_->state(); }
  Observables observe() override { return inner_->observe(); }
  DriftTerms increment() override { return inner_->increment(); }
  std::optional<std::vector<std::string>> failed_checks() const override { return failures_; }

 private:
  std::unique_ptr<FiniteSystem> inner_;
  std::vector<std::string> failures_;
};

class CheckedDynamics final : public Dynamics {
 public:
  CheckedDynamics(std::unique_ptr<const Dynamics> inner, std::vector<std::string> failures) : inner_(std::move(inner)), failures_(std::move(failures)) {}
  DynamicsSettings settings() const override { return inner_->settings(); }
  StateLayout layout() const override { return inner_->layout(); }
  std::unique_ptr<OdeTheory> theory(int replica) const override { return inner_->theory(replica); }
  Eigen::VectorXd initial_state(const OdeTheory& theory) const override { return inner_->initial_state(theory); }
  std::unique_ptr<FiniteSystem> system(double size, std::uint64_t replica) const override {
    return std::make_unique<CheckedSystem>(inner_->system(size, replica), failures_);
  }
  std::vector<EventFunction> events() const override { return inner_->events(); }

 private:
  std::unique_ptr<const Dynamics> inner_;
  std::vector<std::string> failures_;
};

DynamicsModel with_checks(const DynamicsModel& model, std::vector<std::string> failures) {
  DynamicsModel m = model;
  m.bind = [inner = model.bind, failures](const Params& p) -> std::unique_ptr<const Dynamics> {
    return std::make_unique<const CheckedDynamics>(inner(p), failures);
  };
  return m;
}

}  // namespace

// A finite run's own failing check (a conservation law, an identity of every step) is a
// disagreement of validate, whatever the comparison of trajectories says; checks that hold change
// nothing but the summary line saying so.
TEST_CASE("validate: a finite run's own failing check makes it disagree") {
  nlohmann::json s = committee_settings;
  s.erase("drift_samples"), s.erase("drift_times");
  const Params p = resolved("committee", s);
  RunContext ctx = quiet_context();
  const RunOutput plain = dynamics_validate(*committee::dynamics_model(), p, ctx);
  const RunOutput holding = dynamics_validate(with_checks(*committee::dynamics_model(), {}), p, ctx);
  CHECK(holding.exit_code == plain.exit_code);
  CHECK(holding.summary.find("own checks: hold in all 6 runs") != std::string::npos);
  const RunOutput failing = dynamics_validate(with_checks(*committee::dynamics_model(), {"|v|^2 drifts"}), p, ctx);
  CHECK(failing.exit_code == code(ExitCode::disagree));
  CHECK(failing.info["validation"]["failed_checks"].size() == 6);
  CHECK(failing.summary.find("N = 100, run 0: |v|^2 drifts") != std::string::npos);
}

// Through the model's entry, as the program and Python call it: resolving the parameters checks them
// by binding the model, and the command then works from that binding (Params::binding) instead of
// binding a second time. Before, every command bound twice: once in the check, once to run.
TEST_CASE("a command resolved through its entry binds the model once, in the check") {
  register_models();
  const ModelEntry& committee = registry().get("committee");
  nlohmann::json s = committee_settings;
  s.erase("drift_samples"), s.erase("drift_times");
  for (const std::string command : {"curve", "simulate", "validate"}) {
    Calls calls;
    ModelEntry entry;
    entry.name = committee.name;
    entry.params = committee.params;
    add_dynamics_commands(entry, std::make_shared<const DynamicsModel>(counting(*committee::dynamics_model(), calls)));
    std::vector<std::pair<std::string, nlohmann::json>> sets;
    for (const auto& [key, value] : s.items()) sets.emplace_back(key, value);
    const Params p = resolve_for(entry, nlohmann::json(), sets);
    CHECK(calls.binds == 1);  // the check
    RunContext ctx = quiet_context();
    const RunOutput out = entry.commands.at(command)(p, ctx);
    CAPTURE(command);
    REQUIRE(out.exit_code != 130);
    CHECK(calls.binds == 1);  // and nothing more
    // A copy with other keys carries no binding: it is bound anew.
    const Params other = p.with({{"seeds", 2}});
    CHECK(other.binding<Bound>() == nullptr);
  }
}
