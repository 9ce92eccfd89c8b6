// The state-evolution harness (harness.hpp, FixedPointModel) on a model small enough to know exactly:
// the theory says m(α) = α/(1+α); a fit at (α, d, seed) measures m(α) + b/d + g/√d, with g a standard
// normal of the fit's own realisation (the paired theory sees it too, as a model's theory at a
// sampled target spectrum does). A correct theory must agree, a theory off by a few percent must
// not, and the paired comparison must remove the realisation's fluctuation.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <boost/random/normal_distribution.hpp>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <memory>

#include "hdat/core/error.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/random.hpp"

using namespace hdat;

namespace {

double overlap(double alpha) { return alpha / (1 + alpha); }

struct ToyOptions {
  double theory_factor = 1;   // 1: the correct theory
  double bias = 0.5;          // b of the b/d finite-size bias
  bool paired = true;         // the fit reports the theory at its own realisation
  double fluctuation = 1;     // amplitude of g/√d
  double offset = 0;          // added to every fit's m
  bool quantised = false;     // m is known to a step of 1/d only
  /// Counts the fits made; at `interrupt_at` fits the user interrupts (as Ctrl-C would).
  std::shared_ptr<std::atomic<int>> fits = std::make_shared<std::atomic<int>>(0);
  int interrupt_at = -1;
};

class Toy final : public FixedPoints {
 public:
  Toy(const ToyOptions& o, long seeds) : o_(o), seeds_(seeds) {}
  FixedPointSettings settings() const override {
    FixedPointSettings s;
    s.controls = {0.5, 2.0};
    s.simulate_size = 50;
    s.validate_sizes = {50, 100, 200};
    for (long k = 0; k < seeds_; ++k) s.seeds.push_back(static_cast<std::uint64_t>(k));
    s.criterion = {0.01, 0.1, 0.0};  // false_alarm, detectable, rel_floor
    s.compared = {"m"};
    return s;
  }
  std::unique_ptr<const FixedPointRun> theory(const std::vector<double>& alphas, bool) const override {
    auto run = std::make_unique<FixedPointRun>();
    for (double a : alphas) {
      FixedPointSolution point;
      point.converged = true;
      point.observables.add("m", o_.theory_factor * overlap(a));
      point.state = Eigen::VectorXd::Constant(1, o_.theory_factor * overlap(a));
      run->controls.push_back(a);
      run->points.push_back(point);
    }
    run->method = "closed form";
    return run;
  }
  Fit fit(const FitPoint& at) const override {
    auto eng = rng::engine(at.seed, static_cast<std::uint64_t>(at.size), rng::user + at.control_index);
    const double g = boost::random::normal_distribution<double>()(eng) * o_.fluctuation / std::sqrt(double(at.size));
    if (++*o_.fits == o_.interrupt_at) request_interrupt();
    Fit f;
    f.observables.add("m", overlap(at.control) + o_.bias / at.size + g + o_.offset);
    if (o_.offset == 0) f.observables.add("d_seen", at.size);
    if (at.paired && o_.paired) f.paired.add("m", o_.theory_factor * overlap(at.control) + g);
    f.report.converged = true;
    f.report.iterations = 3;
    return f;
  }
  double resolution(const std::string&, int d) const override { return o_.quantised ? 1.0 / d : 0.0; }

 private:
  ToyOptions o_;
  long seeds_;
};

FixedPointModel toy_model(const ToyOptions& o) {
  FixedPointModel m;
  m.bind = [o](const Params& p) -> std::unique_ptr<const FixedPoints> { return std::make_unique<const Toy>(o, p.integer("seeds")); };
  return m;
}

Params toy_params(long seeds) {
  static const ParamSet set = [] {
    ParamSet s;
    s.integer("seeds", 8, "fits per point", Range::at_least(1));
    return s;
  }();
  return resolve(set, nlohmann::json::object(), {{"seeds", seeds}});
}

}  // namespace

TEST_CASE("fixed-point harness: a correct theory agrees, paired or not; a wrong one disagrees") {
  RunContext ctx;
  ctx.quiet = true;
  ctx.threads = 2;
  const Params p = toy_params(16);
  for (bool paired : {true, false}) {
    CAPTURE(paired);
    ToyOptions good;
    good.paired = paired;
    good.fluctuation = 0.1;  // unpaired: se(a) of the extrapolation ~0.004
    const RunOutput ok = fixed_point_validate(toy_model(good), p, ctx);
    CHECK(ok.exit_code == 0);
    CHECK(ok.tables.at("validate.csv").rows() == 2);
    ToyOptions wrong = good;
    wrong.theory_factor = 1.1;  // 10% off (0.033 and 0.067): far outside 3 se(a)
    CHECK(fixed_point_validate(toy_model(wrong), p, ctx).exit_code == 1);
  }
}

TEST_CASE("fixed-point harness: pairing removes the realisation's fluctuation from the difference") {
  RunContext ctx;
  ctx.quiet = true;
  const Params p = toy_params(8);
  ToyOptions o;
  o.fluctuation = 5;
  const FixedPointModel model = toy_model(o);
  const auto bound = model.bind(p);
  const FixedPointSettings s = bound->settings();
  const auto theory = bound->theory(s.controls, true);
  const std::vector<FitGroup> fits = run_fits(*bound, p, s, {100}, theory.get(), "test", ctx);
  REQUIRE(fits.size() == 2);
  for (const FitGroup& g : fits) {
    CHECK(g.mean["m"].se > 0.1);                                   // 5/√100 /√8 ≈ 0.18
    CHECK(g.paired_difference["m"].value == doctest::Approx(0.5 / 100).epsilon(1e-9));  // exactly b/d
    CHECK(g.paired_difference["m"].se < 1e-12);
    CHECK(g.iterations == 3);
    CHECK(g.converged_fraction == 1);
  }
  const Table t = fit_table(model, *bound, s, fits);
  for (const char* c : {"alpha", "d", "m", "m_se", "d_seen", "seeds", "theory_paired_m", "paired_m_diff", "paired_m_diff_se"})
    CHECK_MESSAGE(t.has_column(c), c);
  CHECK(t.number(1, "d_seen") == 100);
}

TEST_CASE("fixed-point harness: the results do not depend on the thread count; validate needs two seeds") {
  const Params p = toy_params(6);
  const FixedPointModel model = toy_model({});
  RunContext one, two;
  one.quiet = two.quiet = true;
  one.threads = 1;
  two.threads = 2;
  const std::string a = fixed_point_simulate(model, p, one).tables.at("sim.csv").to_csv();
  const std::string b = fixed_point_simulate(model, p, two).tables.at("sim.csv").to_csv();
  CHECK(a == b);
  CHECK_THROWS_AS(fixed_point_validate(model, toy_params(1), one), InputError);
}

TEST_CASE("fixed-point harness: a quantised observable's standard error is floored at its resolution") {
  RunContext ctx;
  ctx.quiet = true;
  ToyOptions o;
  o.paired = false;
  o.fluctuation = 0.002;  // se(a) of the extrapolation ~1e-4 over d = 50, 100, 200 with 4 seeds
  o.offset = 0.002;
  const Params p = toy_params(4);
  // A constant offset of 0.002 is 20 se(a) of the extrapolation...
  CHECK(fixed_point_validate(toy_model(o), p, ctx).exit_code == 1);
  // ... but within the allowance, 3 se(a) = 0.004, of an observable known only to a step of 1/d.
  o.quantised = true;
  CHECK(fixed_point_validate(toy_model(o), p, ctx).exit_code == 0);
}

TEST_CASE("fixed-point harness: curve.csv is written from the typed run at the edge") {
  RunContext ctx;
  ctx.quiet = true;
  ToyOptions o;
  o.theory_factor = 2;
  const RunOutput out = fixed_point_curve(toy_model(o), toy_params(2), ctx);
  const Table& t = out.tables.at("curve.csv");
  CHECK(t.columns() == std::vector<std::string>{"alpha", "m", "converged"});
  CHECK(t.numbers("alpha") == std::vector<double>{0.5, 2.0});
  CHECK(t.number(1, "m") == doctest::Approx(2 * overlap(2.0)));
  CHECK(t.number(0, "converged") == 1);
  CHECK(out.exit_code == 0);
}

// Long jobs never lose finished work: an interrupted validate keeps its finished fits in the output
// folder, says so (Interrupted), and the same command resumes from them, computing only the rest,
// with the same tables as a run never interrupted.
TEST_CASE("fixed-point harness: an interrupted validate resumes from its kept fits") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / fmt::format("hdat_fp_resume_{}", ::getpid());
  fs::remove_all(root);
  const Params p = toy_params(4);  // 2 controls x 3 sizes x 4 seeds = 24 fits
  RunContext ctx;
  ctx.quiet = true;
  ctx.threads = 1;
  ctx.out = root / "interrupted";
  ToyOptions o;
  o.interrupt_at = 10;
  std::string message;
  try {
    fixed_point_validate(toy_model(o), p, ctx);
  } catch (const Interrupted& e) {
    message = e.what();
  }
  clear_interrupt();
  CHECK(message.find("10 of 24 fits finished") != std::string::npos);
  const int before = *o.fits;
  o.interrupt_at = -1;
  const RunOutput resumed = fixed_point_validate(toy_model(o), p, ctx);
  CHECK(*o.fits - before == 14);  // only the fits not kept
  RunContext fresh = ctx;
  fresh.out = root / "fresh";
  const RunOutput whole = fixed_point_validate(toy_model(ToyOptions{}), p, fresh);
  for (const char* table : {"sim.csv", "validate.csv", "theory_points.csv"}) {
    CAPTURE(table);
    CHECK(resumed.tables.at(table).to_csv() == whole.tables.at(table).to_csv());
  }
  CHECK(resumed.exit_code == whole.exit_code);
  fs::remove_all(root);
}
