#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "hdat/core/error.hpp"
#include "hdat/core/integrate.hpp"
#include "hdat/core/layout.hpp"

using namespace hdat;

TEST_CASE("harmonic oscillator: observations at requested times match the exact solution") {
  for (std::string stepper : {"dopri5", "rkf78", "cash_karp54", "rosenbrock4"}) {
    CAPTURE(stepper);
    OdeSystem f = [](const ConstVecRef& x, VecRef d, double) { d(0) = x(1), d(1) = -x(0); };
    Eigen::VectorXd x0(2);
    x0 << 1.0, 0.0;
    std::vector<double> times = lin_spaced(0.0, 20.0, 41);
    double worst = 0;
    int seen = 0;
    IntegrateOptions opt;
    opt.stepper = stepper_from_name(stepper);
    opt.rtol = 1e-10;
    opt.atol = 1e-12;
    auto sum = integrate(f, x0, 0.0, times, [&](double t, const Eigen::VectorXd& x) {
      worst = std::max(worst, std::fabs(x(0) - std::cos(t)) + std::fabs(x(1) + std::sin(t)));
      ++seen;
      return true;
    }, opt);
    CHECK(sum.ok());
    CHECK(seen == 41);
    CHECK(worst < (stepper == "rosenbrock4" ? 1e-6 : 1e-8));
    CHECK(sum.rhs_calls > 0);
    CHECK(sum.accepted_steps > 0);
    CHECK(sum.t_reached == doctest::Approx(20.0));
  }
}

TEST_CASE("tolerance controls the error; rejected steps are counted") {
  OdeSystem f = [](const ConstVecRef& x, VecRef d, double t) { d(0) = -50.0 * (x(0) - std::cos(t)); };
  Eigen::VectorXd x0 = Eigen::VectorXd::Constant(1, 0.0);
  double err_loose = 0, err_tight = 0;
  long calls_loose = 0, calls_tight = 0;
  for (double tol : {1e-4, 1e-9}) {
    IntegrateOptions opt;
    opt.rtol = opt.atol = tol;
    Eigen::VectorXd last;
    auto sum = integrate(f, x0, 0.0, {2.0}, [&](double, const Eigen::VectorXd& x) { last = x; return true; }, opt);
    // exact: x = 50/(2500+1) (50 cos t + sin t) - 2500/2501 e^{-50t}
    const double exact = 50.0 / 2501.0 * (50.0 * std::cos(2.0) + std::sin(2.0)) - 2500.0 / 2501.0 * std::exp(-100.0);
    (tol > 1e-6 ? err_loose : err_tight) = std::fabs(last(0) - exact);
    (tol > 1e-6 ? calls_loose : calls_tight) = sum.rhs_calls;
  }
  CHECK(err_tight < err_loose);
  CHECK(err_tight < 1e-7);
  CHECK(calls_tight > calls_loose);
}

TEST_CASE("log time reaches t = 1e20 on a logarithmic flow") {
  // dz/dt = 1/(1 + e^z) has z(t) + e^z(t) = t + z0 + e^z0: z ~ log t, the polarisation margin.
  OdeSystem f = [](const ConstVecRef& x, VecRef d, double) { d(0) = 1.0 / (1.0 + std::exp(x(0))); };
  Eigen::VectorXd x0 = Eigen::VectorXd::Zero(1);
  IntegrateOptions opt;
  opt.log_time = true;
  std::vector<double> times = log_spaced(1.0, 1e20, 21, true);
  double worst = 0;
  auto sum = integrate(f, x0, 0.0, times, [&](double t, const Eigen::VectorXd& x) {
    // exact z solves z + e^z = t + 1 (Newton from log(t + 1)); compare relative to |z| like the controller.
    double ze = std::log(t + 1.0) + 0.1;
    for (int it = 0; it < 100; ++it) ze -= (ze + std::exp(ze) - (t + 1.0)) / (1.0 + std::exp(ze));
    worst = std::max(worst, std::fabs(x(0) - ze) / std::max(1.0, std::fabs(ze)));
    return true;
  }, opt);
  CHECK(sum.ok());
  CHECK(worst < 1e-7);
  CHECK(sum.accepted_steps < 2000);
}

TEST_CASE("a non-finite state stops the run, names the component, keeps earlier observations") {
  StateLayout layout;
  layout.add("M", 1, 1).add("R", 1, 1, true);
  // dR/dt = R^2 blows up at t = 1 from R(0) = 1.
  OdeSystem f = [](const ConstVecRef& x, VecRef d, double) { d(0) = 0.0, d(1) = x(1) * x(1); };
  Eigen::VectorXd x0(2);
  x0 << 0.5, 1.0;
  IntegrateOptions opt;
  opt.component_name = [&](int k) { return layout.component_name(k); };
  opt.divergence = 1e6;
  int seen = 0;
  auto sum = integrate(f, x0, 0.0, lin_spaced(0.0, 2.0, 21), [&](double, const Eigen::VectorXd&) { ++seen; return true; }, opt);
  CHECK_FALSE(sum.ok());
  CHECK(sum.status == IntegrateStatus::diverged);
  CHECK(sum.message.find("R_0_0") != std::string::npos);
  CHECK(seen == 10);  // t = 0, 0.1, ..., 0.9
  CHECK(sum.t_reached < 1.0);

  OdeSystem g = [](const ConstVecRef& x, VecRef d, double t) { d(0) = t > 0.5 ? std::log(-1.0) : 1.0, d(1) = x(1); };
  auto s2 = integrate(g, x0, 0.0, lin_spaced(0.0, 2.0, 21), [&](double, const Eigen::VectorXd&) { return true; }, opt);
  CHECK(s2.status == IntegrateStatus::nonfinite);
  CHECK(s2.message.find("M_0_0") != std::string::npos);
}

TEST_CASE("layout: named views and output columns") {
  StateLayout layout;
  layout.add("M", 2, 3).add("R", 2, 2, true);
  CHECK(layout.size() == 10);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(layout.size());
  auto M = layout.view(x, "M");
  auto R = layout.view(x, "R");
  M(1, 2) = 7.0;
  R(0, 1) = R(1, 0) = 3.0;
  const auto cols = layout.columns();
  REQUIRE(cols.size() == 9);
  CHECK(cols[0] == "M_0_0");
  CHECK(cols[5] == "M_1_2");
  CHECK(cols[6] == "R_0_0");
  CHECK(cols[7] == "R_0_1");
  CHECK(cols[8] == "R_1_1");
  const auto vals = layout.values(x);
  CHECK(vals[5] == 7.0);
  CHECK(vals[7] == 3.0);
  CHECK(layout.component_name(layout.block("M").offset + 5) == "M_1_2");
}

TEST_CASE("events are located between steps, independent of the observation grid") {
  // x = (sin t, cos t): x_0 falls through 0 at t = π and rises through it at t = 2π.
  OdeSystem f = [](const ConstVecRef& x, VecRef d, double) { d(0) = x(1), d(1) = -x(0); };
  Eigen::VectorXd x0(2);
  x0 << 0.0, 1.0;
  EventFunction zero{"x0_zero", [](double, const Eigen::VectorXd& x) { return x(0); }};
  EventFunction rising = zero;
  rising.name = "x0_rises", rising.direction = +1;
  for (std::string stepper : {"dopri5", "rkf78", "cash_karp54", "rosenbrock4"}) {
    for (int points : {2, 7, 300}) {
      CAPTURE(stepper);
      CAPTURE(points);
      IntegrateOptions opt;
      opt.stepper = stepper_from_name(stepper);
      opt.rtol = 1e-10;
      opt.atol = 1e-12;
      opt.events = {zero, rising};
      auto sum = integrate(f, x0, 0.0, lin_spaced(0.0, 7.0, points), [](double, const Eigen::VectorXd&) { return true; }, opt);
      REQUIRE(sum.ok());
      REQUIRE(sum.events.size() == 3);  // zero at π (down) and 2π (up); rising only at 2π
      CHECK(sum.events[0].name == "x0_zero");
      CHECK(sum.events[0].direction == -1);
      // dopri5 interpolates with its own dense output, the others step to the trial time: the
      // location is as accurate as the solution (the observations' bounds in the test above).
      const double tol = stepper == "rosenbrock4" ? 1e-6 : 1e-8;
      CHECK(std::fabs(sum.events[0].t - M_PI) < tol);
      CHECK(std::fabs(sum.events[1].t - 2 * M_PI) < tol);
      CHECK(std::fabs(sum.events[2].t - 2 * M_PI) < tol);
      CHECK(sum.events[1].direction == +1);
      CHECK(std::fabs(sum.events[0].x(1) + 1.0) < 100 * tol);  // the state there: cos π
      CHECK(sum.first_event("x0_rises") != nullptr);
      CHECK(std::fabs(sum.first_event("x0_rises")->t - 2 * M_PI) < tol);
    }
  }
}

TEST_CASE("a terminal event ends the run where it is located; observations beyond it are not made") {
  OdeSystem f = [](const ConstVecRef&, VecRef d, double) { d(0) = 1.0; };  // x = t
  Eigen::VectorXd x0(1);
  x0 << 0.0;
  IntegrateOptions opt;
  opt.rtol = 1e-12;
  opt.atol = 1e-14;
  opt.events = {{"x_reaches", [](double, const Eigen::VectorXd& x) { return x(0) - 1.2345; }, true, 0}};
  std::vector<double> seen;
  std::vector<double> times = {0.0, 0.5, 1.0, 1.5, 2.0};
  for (bool log_time : {false, true}) {
    seen.clear();
    opt.log_time = log_time;
    auto sum = integrate(f, x0, 0.0, times, [&](double t, const Eigen::VectorXd&) {
      seen.push_back(t);
      return true;
    }, opt);
    CHECK(sum.status == IntegrateStatus::stopped_by_event);
    REQUIRE(sum.events.size() == 1);
    // Exact in t (x = t is the stepper's polynomial); in log time to the integration tolerance.
    const double tol = log_time ? 1e-10 : 1e-13;
    CHECK(std::fabs(sum.events[0].t - 1.2345) < tol);
    CHECK(std::fabs(sum.t_reached - 1.2345) < tol);
    CHECK(seen == std::vector<double>{0.0, 0.5, 1.0});
  }
}

TEST_CASE("sampled crossings: linear in g between the two samples that bracket the crossing") {
  EventFunction e{"up", [](double, const Eigen::VectorXd& x) { return x(0) - 1.0; }, false, +1};
  std::vector<double> t = {0, 1, 2, 3};
  std::vector<Eigen::VectorXd> x;
  for (double v : {0.0, 0.5, 2.0, 0.0}) x.push_back(Eigen::VectorXd::Constant(1, v));
  CHECK(first_sampled_crossing(e, t, x) == doctest::Approx(1.0 + 0.5 / 1.5));
  e.direction = -1;  // the way back down: between t = 2 and 3
  CHECK(first_sampled_crossing(e, t, x) == doctest::Approx(2.5));
  x = {Eigen::VectorXd::Constant(1, 0.0), Eigen::VectorXd::Constant(1, 0.5)};
  CHECK(std::isnan(first_sampled_crossing(e, {0, 1}, x)));
}

// A right-hand side that throws stops the run with its reason (a model's numbers failing at a state);
// the model's own failure (hdat::ModelFailure: a Python model's exception) instead reaches the caller.
TEST_CASE("a throwing right-hand side stops the run; the model's own failure passes through") {
  Eigen::VectorXd x0 = Eigen::VectorXd::Ones(1);
  const std::vector<double> times = lin_spaced(0.0, 2.0, 3);
  const auto keep = [](double, const Eigen::VectorXd&) { return true; };
  OdeSystem fails = [](const ConstVecRef&, VecRef d, double t) {
    if (t > 1.0) throw std::domain_error("outside the model's domain");
    d(0) = -1.0;
  };
  const auto stopped = integrate(fails, x0, 0.0, times, keep, IntegrateOptions{});
  CHECK_FALSE(stopped.ok());
  CHECK(stopped.message.find("outside the model's domain") != std::string::npos);
  OdeSystem buggy = [](const ConstVecRef&, VecRef d, double t) {
    if (t > 1.0) throw ModelFailure("the model's own bug", nullptr);
    d(0) = -1.0;
  };
  CHECK_THROWS_WITH_AS(integrate(buggy, x0, 0.0, times, keep, IntegrateOptions{}), "the model's own bug", ModelFailure);
}

// A run's numbers must not depend on where the heap put the steppers' state: an Eigen reduction in
// a right-hand side starts its packets at the first aligned element, so its last bits follow the
// state's address (polarization's sum normalisation gave other digits for another --out path).
// Every stepper therefore hands the system its state in aligned storage; and the same run twice,
// with other allocations between, gives the same bits.
TEST_CASE("the system sees its state aligned for Eigen's packets, whatever the stepper") {
  const auto aligned = [](const double* p) { return reinterpret_cast<std::uintptr_t>(p) % EIGEN_DEFAULT_ALIGN_BYTES == 0; };
  for (std::string stepper : {"dopri5", "rkf78", "cash_karp54", "rosenbrock4"}) {
    CAPTURE(stepper);
    long calls = 0, misaligned = 0;
    OdeSystem f = [&](const ConstVecRef& x, VecRef d, double) {
      ++calls;
      misaligned += aligned(x.data()) && aligned(d.data()) ? 0 : 1;
      // A reduction whose rounding depends on its order: a sum over many components of mixed size.
      const double s = x.sum();
      for (Eigen::Index k = 0; k < x.size(); ++k) d(k) = -x(k) * s / double(k + 1);
    };
    IntegrateOptions opt;
    opt.stepper = stepper_from_name(stepper);
    Eigen::VectorXd x0 = Eigen::VectorXd::LinSpaced(37, 0.01, 1.7);
    x0(5) = 1e9;  // a large entry: the sum's rounding depends on its grouping
    const auto final_state = [&] {
      Eigen::VectorXd last;
      integrate(f, x0 / 1e9, 0.0, {0.0, 3.0}, [&](double, const Eigen::VectorXd& x) { last = x; return true; }, opt);
      return last;
    };
    const Eigen::VectorXd a = final_state();
    std::vector<std::vector<double>> shift;
    for (int k = 1; k < 9; ++k) shift.emplace_back(static_cast<std::size_t>(k), 1.0);  // other allocations between
    const Eigen::VectorXd b = final_state();
    CHECK(calls > 0);
    CHECK(misaligned == 0);
    CHECK(a == b);
  }
}
