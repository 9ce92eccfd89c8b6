// The command-line contract through the registry (the same functions `hdat` calls; curve, simulate and
// validate come from the core's harness): curve.csv / sim.csv columns, validate's verdict (agree, and
// disagree when a term of the flow is wrong), the drift check, the identities of every step, the keys'
// conditions and bad input, persisted runs, figures.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "../quiet_context.hpp"
#include "helpers.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/polarization/declaration.hpp"
#include "hdat/polarization/gd.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/plot.hpp"
#include "hdat/polarization/reduced.hpp"

namespace hdat {
void register_polarization(Registry& r);
}

using namespace hdat;
using namespace hdat::polarization;
using test_pol::config;

namespace {

using Sets = std::vector<std::pair<std::string, nlohmann::json>>;

const ModelEntry& model() {
  static Registry reg;
  static bool done = false;
  if (!done) {
    register_polarization(reg);
    done = true;
  }
  return reg.get("polarization");
}

RunOutput run(const std::string& command, const Sets& sets, const std::filesystem::path& out = {}) {
  const ModelEntry& m = model();
  Params p = resolve_for(m, nullptr, sets);
  RunContext ctx = quiet_context();
  ctx.out = out;
  return m.commands.at(command)(p, ctx);
}

// The RMS gap of a block at every step size of a validate record (largest step first).
std::vector<double> gaps(const RunOutput& out, const std::string& block) {
  std::vector<double> g;
  for (const auto& size : out.info["validation"]["per_size"]) g.push_back(size["gap_rms"][block].get<double>());
  return g;
}

}  // namespace

TEST_CASE("curve.csv and sim.csv follow the contract: t, loss, z, entropy, top_gap, V_norm, s_i, u_i, a_i, then extras") {
  for (const std::string loss : {"logistic", "square", "regression"})
    for (const std::string cmd : {"curve", "simulate"}) {
      CAPTURE(loss);
      CAPTURE(cmd);
      const RunOutput out = run(cmd, {{"loss", loss}, {"T", 3}, {"t_max", 10}, {"points", 5}});
      const Table& t = out.tables.at(cmd == "curve" ? "curve.csv" : "sim.csv");
      const std::vector<std::string> expect = {"t", "loss", "z", "entropy", "top_gap", "V_norm", "s_0", "s_1", "s_2", "u_0", "u_1", "u_2", "a_0", "a_1",
                                               "a_2"};
      REQUIRE(t.columns().size() >= expect.size());
      for (std::size_t i = 0; i < expect.size(); ++i) CHECK(t.columns()[i] == expect[i]);
      for (const char* extra : {"top", "one_minus_s_top", "min_gap", "eps_log2t", "z_minus_logt", "top_col_norm"}) CHECK(t.has_column(extra));
      CHECK(!t.has_column("loss_se"));  // gradient descent is deterministic: no standard errors
      CHECK(t.number(0, "t") == 0.0);
      CHECK(out.exit_code == 0);
      // The theory is observed at the requested times; gradient descent at whole steps of lr = 0.1.
      if (cmd == "curve") {
        CHECK(t.rows() == 6);
        CHECK(t.number(1, "t") == doctest::Approx(0.01));
      } else {
        REQUIRE(t.rows() == 5);  // 0, 0.01 -> 0, 0.056 -> 0.1, 0.32 -> 0.3, 1.8, 10
        CHECK(t.number(1, "t") == doctest::Approx(0.1));
        for (std::size_t r = 0; r < t.rows(); ++r) CHECK(std::fabs(t.number(r, "t") / 0.1 - std::round(t.number(r, "t") / 0.1)) < 1e-9);
      }
    }
  const RunOutput c = run("curve", {{"t_max", 100}});
  CHECK(c.info.contains("solver"));
  CHECK(c.info["solver"]["rhs_calls"].get<long>() > 0);
  CHECK(c.info.contains("events"));
  CHECK(c.info["flow"]["kind"] == "reduced");
  CHECK(c.info.contains("asymptotics"));
  CHECK(c.info.contains("instance"));
  const RunOutput sq = run("curve", {{"loss", "square"}, {"T", 3}, {"t_max", 10}});
  CHECK(sq.tables.at("curve.csv").has_column("Q_0_2"));
  CHECK(!sq.tables.at("curve.csv").has_column("Q_2_0"));  // symmetric block: i <= j only
  const RunOutput reg = run("curve", {{"loss", "regression"}, {"T", 3}, {"d", 2}, {"t_max", 10}});
  CHECK(reg.info["flow"]["kind"] == "full");
  CHECK(reg.tables.at("curve.csv").has_column("V_1_2"));  // the full flow's state
}

TEST_CASE("validate: GD and the reduced flow agree with an O(η) gap that halves with η") {
  const RunOutput out = run("validate", {{"init", "numpy"}, {"seed", 123}, {"t_max", 1e3}, {"points", 60}});
  CHECK(out.exit_code == 0);
  const auto& v = out.info["validation"];
  CHECK(v["verdict"] == "agree");
  // The identities of every step are the runs' own checks: listed (none failing) in the record.
  REQUIRE(v.contains("failed_checks"));
  CHECK(v["failed_checks"].is_array());
  CHECK(v["failed_checks"].empty());
  CHECK(v["drift"]["verdict"] == "agree");
  for (const std::string block : {"loss", "V_norm", "u", "a"}) {
    CAPTURE(block);
    const auto g = gaps(out, block);
    REQUIRE(g.size() == 3);
    for (std::size_t k = 0; k + 1 < g.size(); ++k) CHECK(g[k] / g[k + 1] == doctest::Approx(2.0).epsilon(0.1));
    CHECK(v["gap_exponent"][block].get<double>() == doctest::Approx(1.0).epsilon(0.1));
    CHECK(g.back() < 0.01);
  }
  for (const char* table : {"validate.csv", "validate_curves.csv", "convergence.csv", "drift.csv"}) CHECK(out.tables.count(table) == 1);
  // Per step size: the flow's own record (kind, events) and gradient descent's (steps, identities).
  const auto& finest = v["per_size"].back();
  CHECK(finest["theory"]["flow"]["kind"] == "reduced");
  CHECK(finest["theory"].contains("events"));
  CHECK(finest["runs"][0]["steps"].get<long>() == 40000);  // t_max / (lr / 4)
  CHECK(out.tables.at("convergence.csv").rows() == 3);
}

TEST_CASE("validate fails when a term of the flow is wrong: the replicator sign printed as −γ") {
  const Sets base = {{"init", "numpy"}, {"seed", 123}, {"t_max", 1e3}, {"points", 60}};
  Sets broken = base;
  broken.push_back({"break_term", "replicator_sign"});
  const RunOutput good = run("validate", base), out = run("validate", broken);
  CHECK(out.exit_code == 1);
  CHECK(out.info["validation"]["verdict"] == "disagree");
  const auto g = gaps(out, "a"), g_good = gaps(good, "a");
  CHECK(g.back() > 100 * g_good.back());                           // an O(1) gap ...
  CHECK(g.front() / g.back() == doctest::Approx(1.0).epsilon(0.05));  // ... that does not shrink with η
  CHECK(out.info["validation"]["drift"]["verdict"] == "disagree");    // and one step already shows it
}

TEST_CASE("validate: every loss and the tied model agree with the derived sign, and disagree with the broken one") {
  const std::vector<Sets> configs = {
      {{"loss", "square"}, {"t_max", 50}, {"points", 30}, {"a0_std", 0.5}},
      {{"loss", "regression"}, {"t_max", 50}, {"points", 30}, {"a0_std", 0.5}},  // full flow
      {{"loss", "xent"}, {"t_max", 50}, {"points", 30}, {"a0_std", 0.5}},
      {{"architecture", "tied"}, {"T", 6}, {"d", 6}, {"a0_mean", 1.0}, {"a0_std", 0.1}, {"t_max", 50}, {"lr", 0.05}, {"points", 30}}};
  for (const Sets& sets : configs) {
    CAPTURE(nlohmann::json(sets).dump());
    CHECK(run("validate", sets).exit_code == 0);
    Sets broken = sets;
    broken.push_back({"break_term", "replicator_sign"});
    CHECK(run("validate", broken).exit_code == 1);
  }
}

TEST_CASE("drift check: one GD step changes (u, a) by exactly η times the reduced right-hand side; a wrong |β*|² is caught") {
  const Config c = config({{"T", 5}, {"d", 7}, {"V0_std", 0.5}, {"a0_std", 0.5}, {"seed", 13}, {"beta_norm", 1.5}});
  const Instance in = make_instance(c);
  ReducedLogistic good(c, in);
  // The same step against a reduced flow that uses |β*| = 1 in du/dt = |β*|² γ s: an O(1) residual.
  Config wrong = c;
  wrong.beta_norm = 1.0;
  ReducedLogistic bad(wrong, in);
  GradientDescent gd(c, in, 0.1);
  const Eigen::VectorXd x = gd.state();
  CHECK((x - good.initial_state()).cwiseAbs().maxCoeff() < 1e-15);
  Eigen::VectorXd fg(x.size()), fb(x.size());
  good.rhs(x, fg);
  bad.rhs(x, fb);
  const DriftTerms inc = gd.increment();
  CHECK(gd.steps() == 0);  // measured without stepping
  CHECK((inc.total() - fg).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((inc.total() - fb).cwiseAbs().maxCoeff() > 1e-3);
  // The step actually taken.
  gd.advance_to(0.1);
  REQUIRE(gd.steps() == 1);
  CHECK(((gd.state() - x) / 0.1 - fg).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("square loss drift check: ΔQ/η = s wᵀ + w sᵀ + η GᵀG exactly") {
  const Config c = config({{"loss", "square"}, {"T", 4}, {"d", 6}, {"V0_std", 0.5}, {"a0_std", 0.5}, {"seed", 2}});
  const Instance in = make_instance(c);
  ReducedSquare flow(c, in);
  const double eta = 0.05;
  GradientDescent gd(c, in, eta);
  for (double t : {0.0, 0.5, 5.0}) {
    CAPTURE(t);
    gd.advance_to(t);
    const Eigen::VectorXd x = gd.state();
    Eigen::VectorXd f(x.size());
    flow.rhs(x, f);
    // One step's change over η: the flow's right-hand side in u and a, plus η GᵀG in Q.
    FullModel m(c, in);
    Eigen::MatrixXd G(c.d, c.T);
    Eigen::Ref<Eigen::MatrixXd> Gr(G);
    m.evaluate(gd.V(), gd.a(), &Gr);
    const Eigen::MatrixXd V1 = gd.V() - eta * G;
    Eigen::VectorXd a1 = gd.a();
    {
      Eigen::VectorXd ga(c.T);
      Eigen::Ref<Eigen::VectorXd> gar(ga);
      m.evaluate(gd.V(), gd.a(), nullptr, &gar);
      a1 -= eta * ga;
    }
    Eigen::VectorXd step = (flow.state_of(V1, a1) - x) / eta - f;
    const StateLayout& L = flow.layout();
    CHECK((L.view(step, "Q") - eta * G.transpose() * G).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((eta * G.transpose() * G).cwiseAbs().maxCoeff() > 1e-4);  // the η² term is not negligible here
    L.view(step, "Q").setZero();
    CHECK(step.cwiseAbs().maxCoeff() < 1e-12);
    // The system's increment removes exactly that term.
    CHECK((gd.increment().total() - f).cwiseAbs().maxCoeff() < 1e-12);
  }
}

TEST_CASE("validate mode=drift: the core's drift check agrees, and disagrees with the broken term") {
  for (const std::string loss : {"logistic", "square", "regression"}) {
    CAPTURE(loss);
    const Sets sets = {{"loss", loss}, {"mode", "drift"}, {"a0_std", 0.5}, {"t_max", 20}, {"drift_times", std::vector<double>{0, 1, 10}}};
    const RunOutput out = run("validate", sets);
    CHECK(out.exit_code == 0);
    CHECK(out.tables.at("drift.csv").rows() > 0);
    CHECK(out.info["validation"]["max_deviation_over_allowed"].get<double>() < 0.1);  // round-off, far below the 1e-8 allowed
    Sets broken = sets;
    broken.push_back({"break_term", "replicator_sign"});
    CHECK(run("validate", broken).exit_code == 1);
  }
}

TEST_CASE("the identities of every step: mean(a), span(β*), the |V|² identity hold to round-off and overrule validate when broken") {
  const Config c = config({{"T", 5}, {"d", 7}, {"V0_std", 0.5}, {"a0_std", 0.5}, {"seed", 4}});
  GradientDescent gd(c, make_instance(c), 0.1);
  for (double t : {1.0, 10.0, 100.0}) {
    gd.advance_to(t);
    gd.measure();
  }
  const auto inv = gd.invariants();
  CHECK(inv["mean_a_drift"].get<double>() < 1e-12);
  CHECK(inv["V_minus_V0_orthogonal_to_beta"].get<double>() < 1e-12);
  CHECK(inv["energy_identity_residual"].get<double>() < 1e-13);
  CHECK(gd.identity_failures().empty());
  CHECK(gd.record()["identity_failures"].empty());
}

TEST_CASE("keys say when they apply: set where they do not, an InputError names the key and the condition") {
  const ModelEntry& m = model();
  auto refused = [&](const Sets& sets, const std::string& key, const std::string& condition) {
    CAPTURE(key);
    try {
      resolve_for(m, nullptr, sets);
      FAIL("no error for key " << key);
    } catch (const InputError& e) {
      CHECK(e.key() == key);
      CHECK(std::string(e.what()).find(condition) != std::string::npos);
    }
  };
  auto accepted = [&](const Sets& sets) { CHECK_NOTHROW(resolve_for(m, nullptr, sets)); };
  // A choice key's values (when_in): loss, architecture, init.
  refused({{"kappa", 3}}, "kappa", "loss is regression");
  accepted({{"loss", "regression"}, {"kappa", 3}, {"n", 5}});
  refused({{"loss", "square"}, {"n", 5}}, "n", "loss is regression");
  refused({{"p_star", std::vector<double>(8, 0.125)}}, "p_star", "loss is xent");
  refused({{"target_sharpness", 2}}, "target_sharpness", "loss is xent");
  refused({{"loss", "xent"}, {"beta_norm", 2}}, "beta_norm", "loss is logistic or square");
  refused({{"U0_scale", 2}}, "U0_scale", "architecture is tied");
  accepted({{"architecture", "tied"}, {"U0_scale", 2}});
  refused({{"architecture", "tied"}, {"V0_std", 0.2}}, "V0_std", "architecture is value");
  refused({{"u0", std::vector<double>{1, 2}}}, "u0", "init is explicit");
  refused({{"init", "explicit"}, {"u0", std::vector<double>(8, 0.1)}, {"a0_std", 0.3}}, "a0_std", "init is random, numpy or numpy_target_first");
  // A condition on two keys.
  refused({{"init", "explicit"}, {"u0", std::vector<double>(2, 0.1)}, {"T", 2}, {"Q0", std::vector<std::vector<double>>{{1, 0}, {0, 1}}}}, "Q0",
          "init is explicit and loss is square");
  refused({{"loss", "square"}, {"T", 2}, {"Q0", std::vector<std::vector<double>>{{1, 0}, {0, 1}}}}, "Q0", "init is explicit and loss is square");
  accepted({{"loss", "square"}, {"init", "explicit"}, {"T", 2}, {"u0", std::vector<double>{0.1, 0.2}},
            {"Q0", std::vector<std::vector<double>>{{1, 0}, {0, 1}}}});
  // A condition on whether another key is set.
  // t_max with t_points is a consistent pair (issue 32): it bounds the list; a time past it is refused by the command.
  CHECK_NOTHROW(resolve_for(m, nullptr, {{"t_points", std::vector<double>{0, 1, 2}}, {"t_max", 5}}));
  refused({{"t_points", std::vector<double>{0, 1, 2}}, {"points", 5}}, "points", "t_points is not set");
  accepted({{"t_points", std::vector<double>{0, 1, 2}}});
}

TEST_CASE("bad input: one clear InputError naming the key") {
  const ModelEntry& m = model();
  auto bad = [&](const Sets& sets, const std::string& key) {
    try {
      Params p = resolve_for(m, nullptr, sets);
      RunContext ctx = quiet_context();
      m.commands.at("curve")(p, ctx);
      FAIL("no error for key " << key);
    } catch (const InputError& e) {
      CHECK(e.key() == key);
    }
  };
  bad({{"init", "explicit"}}, "u0");                                                      // explicit without u0
  bad({{"init", "explicit"}, {"u0", std::vector<double>{1, 2}}}, "u0");                  // wrong length
  bad({{"a0", std::vector<double>{0, 0, 0}}}, "a0");                                      // wrong length
  bad({{"architecture", "tied"}, {"d", 5}}, "d");                                         // tied needs d = T
  bad({{"loss", "regression"}, {"flow", "reduced"}}, "flow");                             // no closed reduction
  bad({{"loss", "xent"}, {"d", 2}, {"p_star", std::vector<double>{0.5, 0.6}}}, "p_star");  // not a distribution
  bad({{"break_term", "eta2"}}, "break_term");                                            // not a term of this model
  bad({{"normalization", "tanh"}}, "normalization");
  bad({{"T", 1}}, "T");
  bad({{"nonsense", 1}}, "nonsense");
  bad({{"t_points", std::vector<double>{0, 2, 1}}}, "t_points");
  // Too many gradient steps for simulate (at lr) and validate (at lr / 2^halvings); curve runs no steps.
  RunContext ctx = quiet_context();
  CHECK_THROWS_AS(m.commands.at("simulate")(resolve_for(m, nullptr, {{"lr", 1e-9}, {"t_max", 1e6}}), ctx), InputError);
  CHECK_THROWS_AS(m.commands.at("validate")(resolve_for(m, nullptr, {{"lr", 1e-4}, {"t_max", 1e6}, {"halvings", 8}}), ctx), InputError);
  CHECK(m.commands.at("curve")(resolve_for(m, nullptr, {{"lr", 1e-9}, {"t_max", 1e6}}), ctx).exit_code == 0);
}

TEST_CASE("simulate persists its run with the record of gradient descent; a rerun reads it back") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "hdat_test_polarization_persist";
  fs::remove_all(dir);
  const Sets sets = {{"normalization", "sum"}, {"a0_mean", 1.0}, {"a0_std", 0.5}, {"t_max", 100}, {"points", 20}, {"figures", false}};
  const RunOutput first = run("simulate", sets, dir);
  REQUIRE(first.info["simulation"].contains("runs"));
  const auto& record = first.info["simulation"]["runs"][0];
  CHECK(record["steps"].get<long>() == 1000);
  CHECK(record.contains("invariants"));
  CHECK(record.contains("events"));
  CHECK(first.info["events"] == record["events"]);
  int records = 0, checks = 0;
  for (const auto& e : fs::directory_iterator(dir / "seeds")) {  // the run's record and its own checks, beside its initial state
    records += e.path().string().find(".csv.json") != std::string::npos;
    checks += e.path().string().find(".checks.json") != std::string::npos;
  }
  CHECK(records == 1);
  CHECK(checks == 1);
  const RunOutput again = run("simulate", sets, dir);
  CHECK(again.info["simulation"]["runs"][0] == record);
  CHECK(again.tables.at("sim.csv").to_csv() == first.tables.at("sim.csv").to_csv());
  fs::remove_all(dir);
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
  for (const std::string cmd : {"simulate", "validate"}) {
    CAPTURE(cmd);
    fs::remove_all(dir);
    const RunOutput out = run(cmd, {{"t_max", 50}, {"points", 20}});
    for (const auto& [name, t] : out.tables) write_file_atomic(dir / name, t.to_csv());
    const auto stems = plot_folder(dir);
    CHECK(stems.size() == 1);
    CHECK(fs::exists(dir / (cmd == "simulate" ? "polarization.png" : "convergence.svg")));
  }
  fs::remove_all(dir);
}
