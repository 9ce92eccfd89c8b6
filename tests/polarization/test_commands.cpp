// The command-line contract through the registry (the same functions `hdat` calls): curve.csv columns,
// validate's verdict (agree, and disagree when a term of the flow is wrong), the drift check, bad
// input, figures.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "helpers.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/reduced.hpp"
#include "hdat/polarization/claims.hpp"
#include "hdat/polarization/compare.hpp"
#include "hdat/polarization/gd.hpp"
#include "hdat/polarization/plot.hpp"

namespace hdat {
void register_polarization(Registry& r);
}

using namespace hdat;
using namespace hdat::polarization;
using test_pol::config;

namespace {

const ModelEntry& model() {
  static Registry reg;
  static bool done = false;
  if (!done) {
    register_polarization(reg);
    done = true;
  }
  return reg.get("polarization");
}

RunOutput run(const std::string& command, const std::vector<std::pair<std::string, nlohmann::json>>& sets) {
  const ModelEntry& m = model();
  Params p = resolve_for(m, nullptr, sets);
  RunContext ctx;
  ctx.quiet = true;
  return m.commands.at(command)(p, ctx);
}

}  // namespace

TEST_CASE("curve.csv and sim.csv follow the contract: t, loss, z, entropy, top_gap, V_norm, s_i, u_i, a_i, then extras") {
  for (const std::string cmd : {"curve", "simulate"}) {
    CAPTURE(cmd);
    const RunOutput out = run(cmd, {{"T", 3}, {"t_max", 10}, {"points", 5}});
    const Table& t = out.tables.at(cmd == "curve" ? "curve.csv" : "sim.csv");
    const std::vector<std::string> expect = {"t", "loss", "z", "entropy", "top_gap", "V_norm", "s_0", "s_1", "s_2", "u_0", "u_1", "u_2", "a_0", "a_1",
                                             "a_2", "top", "one_minus_s_top", "min_gap", "eps_log2t", "z_minus_logt"};
    REQUIRE(t.columns().size() >= expect.size());
    for (std::size_t i = 0; i < expect.size(); ++i) CHECK(t.columns()[i] == expect[i]);
    CHECK(t.number(0, "t") == 0.0);
    CHECK(out.exit_code == 0);
  }
  const RunOutput c = run("curve", {{"t_max", 100}});
  CHECK(c.info.contains("solver"));
  CHECK(c.info["solver"]["rhs_calls"].get<long>() > 0);
  CHECK(c.info.contains("events"));
  const RunOutput sq = run("curve", {{"loss", "square"}, {"T", 3}, {"t_max", 10}});
  CHECK(sq.tables.at("curve.csv").has_column("Q_0_2"));
  CHECK(!sq.tables.at("curve.csv").has_column("Q_2_0"));  // symmetric block: i <= j only
}

TEST_CASE("validate: GD and the reduced flow agree with an O(η) gap that halves with η") {
  const RunOutput out = run("validate", {{"init", "numpy"}, {"seed", 123}, {"t_max", 1e3}, {"points", 60}});
  CHECK(out.exit_code == 0);
  const auto& v = out.info["verdict"];
  CHECK(v["agree"].get<bool>());
  const auto gaps = v["gaps"].get<std::vector<double>>();
  REQUIRE(gaps.size() == 3);
  for (std::size_t k = 0; k + 1 < gaps.size(); ++k) CHECK(gaps[k] / gaps[k + 1] == doctest::Approx(2.0).epsilon(0.1));
  CHECK(gaps.back() < 0.01);
}

TEST_CASE("validate fails when a term of the flow is wrong: the replicator sign printed as −γ") {
  const RunOutput out = run("validate", {{"init", "numpy"}, {"seed", 123}, {"t_max", 1e3}, {"points", 60}, {"replicator_sign", -1}});
  CHECK(out.exit_code == 1);
  const auto gaps = out.info["verdict"]["gaps"].get<std::vector<double>>();
  CHECK(gaps.back() > 0.5);                                       // an O(1) gap ...
  CHECK(gaps.front() / gaps.back() == doctest::Approx(1.0).epsilon(0.05));  // ... that does not shrink with η
}

TEST_CASE("validate fails for the other losses too when the sign is wrong, and agrees with the derived sign") {
  for (const std::string loss : {"square"}) {
    CAPTURE(loss);
    CHECK(run("validate", {{"loss", loss}, {"t_max", 50}, {"points", 30}}).exit_code == 0);
    CHECK(run("validate", {{"loss", loss}, {"t_max", 50}, {"points", 30}, {"replicator_sign", -1}, {"a0_std", 0.5}}).exit_code == 1);
  }
  for (const std::string loss : {"regression", "xent"}) {  // full flow: no sign knob, the gradient is the gradient
    CAPTURE(loss);
    CHECK(run("validate", {{"loss", loss}, {"t_max", 50}, {"points", 30}}).exit_code == 0);
  }
  CHECK(run("validate", {{"architecture", "tied"}, {"T", 6}, {"d", 6}, {"a0_mean", 1.0}, {"a0_std", 0.1}, {"t_max", 50}, {"lr", 0.05}, {"points", 30}})
            .exit_code == 0);
}

TEST_CASE("drift check: one GD step changes (u, a) by exactly η times the reduced right-hand side; a wrong |β*|² is caught") {
  const Config c = config({{"T", 5}, {"d", 7}, {"V0_std", 0.5}, {"a0_std", 0.5}, {"seed", 13}, {"beta_norm", 1.5}});
  const Instance in = make_instance(c);
  GdOptions o;
  o.lr = 0.1;
  o.times = {0.0, 0.1};
  const GdRun g = gradient_descent(c, in, o);
  CHECK(g.invariants["drift_residual_u_a"].get<double>() < 1e-13);
  // The same step against a reduced flow that uses |β*| = 1 in du/dt = |β*|² γ s: an O(1) residual.
  Config wrong = c;
  wrong.beta_norm = 1.0;
  ReducedLogistic bad(wrong, in), good(c, in);
  Eigen::VectorXd x = good.initial_state(), fg(x.size()), fb(x.size());
  good.rhs(x, fg);
  bad.rhs(x, fb);
  const Eigen::VectorXd u1 = (g.V_final.transpose() * in.beta_star);
  const Eigen::VectorXd du = (u1 - in.u0) / 0.1;
  CHECK((du - fg.segment(0, 5)).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((du - fb.segment(0, 5)).cwiseAbs().maxCoeff() > 1e-3);
}

TEST_CASE("square loss drift check: ΔQ/η = s wᵀ + w sᵀ + η GᵀG exactly") {
  const Config c = config({{"loss", "square"}, {"T", 4}, {"d", 6}, {"V0_std", 0.5}, {"a0_std", 0.5}, {"seed", 2}});
  GdOptions o;
  o.lr = 0.05;
  o.times = {0.0, 0.05, 0.5, 5.0};
  const GdRun g = gradient_descent(c, make_instance(c), o);
  CHECK(g.invariants["drift_residual_Q"].get<double>() < 1e-12);
  CHECK(g.invariants["drift_residual_u_a"].get<double>() < 1e-12);
}

TEST_CASE("bad input: one clear InputError naming the key") {
  const ModelEntry& m = model();
  auto bad = [&](const std::vector<std::pair<std::string, nlohmann::json>>& sets, const std::string& key) {
    try {
      Params p = resolve_for(m, nullptr, sets);
      RunContext ctx;
      m.commands.at("curve")(p, ctx);
      FAIL("no error for key " << key);
    } catch (const InputError& e) {
      CHECK(e.key() == key);
    }
  };
  bad({{"u0", std::vector<double>{1, 2}}}, "u0");                                         // u0 without init=explicit
  bad({{"init", "explicit"}}, "u0");                                                      // explicit without u0
  bad({{"init", "explicit"}, {"u0", std::vector<double>{1, 2}}}, "u0");                  // wrong length
  bad({{"a0", std::vector<double>{0, 0, 0}}}, "a0");                                      // wrong length
  bad({{"architecture", "tied"}, {"d", 5}}, "d");                                         // tied needs d = T
  bad({{"loss", "regression"}, {"flow", "reduced"}}, "flow");                             // no closed reduction
  bad({{"loss", "xent"}, {"d", 2}, {"p_star", std::vector<double>{0.5, 0.6}}}, "p_star");  // not a distribution
  bad({{"replicator_sign", 0}}, "replicator_sign");
  bad({{"normalization", "tanh"}}, "normalization");
  bad({{"T", 1}}, "T");
  bad({{"nonsense", 1}}, "nonsense");
  bad({{"t_points", std::vector<double>{0, 2, 1}}}, "t_points");
  // Too many gradient steps for simulate.
  Params p = resolve_for(m, nullptr, {{"lr", 1e-9}, {"t_max", 1e6}});
  RunContext ctx;
  CHECK_THROWS_AS(m.commands.at("simulate")(p, ctx), InputError);
}

TEST_CASE("analyze: the sign claim reproduces (+γ agrees, −γ disagrees)") {
  const RunOutput out = run("analyze", {{"claim", "sign"}});
  CHECK(out.exit_code == 0);
  CHECK(out.tables.count("claim.csv") == 1);
  CHECK(out.tables.at("claim.csv").rows() == 2);
}

TEST_CASE("figures: plot_folder renders curve/sim and validate folders") {
  if (!plot::available()) return;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "hdat_test_polarization_plot";
  fs::remove_all(dir);
  const RunOutput out = run("validate", {{"t_max", 50}, {"points", 20}});
  for (const auto& [name, t] : out.tables) write_file_atomic(dir / name, t.to_csv());
  const auto stems = plot_folder(dir);
  CHECK(stems.size() == 2);
  CHECK(fs::exists(dir / "polarization.png"));
  CHECK(fs::exists(dir / "convergence.svg"));
  fs::remove_all(dir);
}
