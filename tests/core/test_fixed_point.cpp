#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "hdat/core/error.hpp"
#include "hdat/core/fixed_point.hpp"

using namespace hdat;

namespace {
FixedPointOptions with_method(FixedPointMethod m) {
  FixedPointOptions o;
  o.method = m;
  o.tolerance = 1e-12;
  o.max_iterations = 2000;
  return o;
}
}  // namespace

TEST_CASE("every method finds the fixed point of cos (the Dottie number) and of a linear contraction") {
  // x = cos x has the unique real solution 0.7390851332151606416553... (a known constant).
  const VectorFunction cosine = [](const Eigen::VectorXd& x) -> Eigen::VectorXd { return x.array().cos(); };
  // x = A x + b with spectral radius < 1: x* = (I − A)⁻¹ b.
  Eigen::Matrix3d A;
  A << 0.5, 0.2, -0.1, 0.1, 0.6, 0.2, -0.3, 0.1, 0.7;
  const Eigen::Vector3d b(1, -2, 0.5);
  const VectorFunction linear = [&](const Eigen::VectorXd& x) -> Eigen::VectorXd { return A * x + b; };
  const Eigen::Vector3d exact = (Eigen::Matrix3d::Identity() - A).lu().solve(b);
  for (FixedPointMethod m : {FixedPointMethod::damped, FixedPointMethod::anderson, FixedPointMethod::newton}) {
    CAPTURE(fixed_point_method_name(m));
    FixedPointSummary s;
    const Eigen::VectorXd x = solve_fixed_point(cosine, Eigen::VectorXd::Constant(2, 0.1), with_method(m), s);
    CHECK(s.converged);
    CHECK(s.method == fixed_point_method_name(m));
    CHECK(x(0) == doctest::Approx(0.7390851332151606).epsilon(1e-10));
    CHECK(s.residual <= 1e-12);
    CHECK(s.evaluations > 0);
    const Eigen::VectorXd y = solve_fixed_point(linear, Eigen::VectorXd::Zero(3), with_method(m), s);
    CHECK(s.converged);
    CHECK((y - exact).cwiseAbs().maxCoeff() < 1e-9);
  }
}

TEST_CASE("Anderson mixing beats the damped iteration on a slowly contracting map; Newton is exact on a linear one") {
  Eigen::Matrix2d A;
  A << 0.95, 0.0, 0.0, -0.9;  // rates 0.95 and −0.9: the damped iteration needs hundreds of steps
  const VectorFunction g = [&](const Eigen::VectorXd& x) -> Eigen::VectorXd { return A * x + Eigen::Vector2d(1, 1); };
  FixedPointSummary damped, anderson, newton;
  solve_fixed_point(g, Eigen::VectorXd::Zero(2), with_method(FixedPointMethod::damped), damped);
  solve_fixed_point(g, Eigen::VectorXd::Zero(2), with_method(FixedPointMethod::anderson), anderson);
  solve_fixed_point(g, Eigen::VectorXd::Zero(2), with_method(FixedPointMethod::newton), newton);
  REQUIRE(damped.converged);
  REQUIRE(anderson.converged);
  REQUIRE(newton.converged);
  CHECK(anderson.iterations * 5 < damped.iterations);
  CHECK(newton.iterations <= 2);  // one exact step, then the check
  CHECK(damped.residual_history.size() == static_cast<std::size_t>(damped.iterations + 1));
}

TEST_CASE("a stationary point of a flow: f(x) = 0 by Newton, and by iteration of x + f(x)") {
  // dx/dt = 2 − x², dy/dt = x − y: the stationary point (√2, √2).
  const VectorFunction flow = [](const Eigen::VectorXd& v) -> Eigen::VectorXd { return Eigen::Vector2d(2 - v(0) * v(0), v(0) - v(1)); };
  for (FixedPointMethod m : {FixedPointMethod::newton, FixedPointMethod::anderson}) {
    CAPTURE(fixed_point_method_name(m));
    FixedPointOptions o = with_method(m);
    o.damping = 0.2;
    FixedPointSummary s;
    const Eigen::VectorXd x = solve_stationary_point(flow, Eigen::Vector2d(1, 0), o, s);
    REQUIRE(s.converged);
    CHECK(x(0) == doctest::Approx(std::sqrt(2.0)).epsilon(1e-10));
    CHECK(x(1) == doctest::Approx(std::sqrt(2.0)).epsilon(1e-10));
  }
}

TEST_CASE("iterates stay admissible: the mixed and the Newton steps are refused outside the domain") {
  // g(x) = 0.5 (x + 2/x) (Newton's iteration for √2) is defined for x > 0 only; start where an
  // undamped extrapolation would overshoot below zero.
  long refused_calls = 0;
  const VectorFunction g = [&](const Eigen::VectorXd& x) -> Eigen::VectorXd {
    if (!(x(0) > 0)) ++refused_calls;
    return Eigen::VectorXd::Constant(1, 0.5 * (x(0) + 2 / x(0)));
  };
  const Admissibility positive = [](const Eigen::VectorXd& x) { return x(0) > 0; };
  for (FixedPointMethod m : {FixedPointMethod::damped, FixedPointMethod::anderson, FixedPointMethod::newton}) {
    CAPTURE(fixed_point_method_name(m));
    FixedPointSummary s;
    const Eigen::VectorXd x = solve_fixed_point(g, Eigen::VectorXd::Constant(1, 0.05), with_method(m), s, positive);
    CHECK(s.converged);
    CHECK(x(0) == doctest::Approx(std::sqrt(2.0)).epsilon(1e-10));
  }
  CHECK(refused_calls == 0);
}

TEST_CASE("no convergence is reported, not hidden; a non-finite residual is a NumericalError; bad options are refused") {
  const VectorFunction doubling = [](const Eigen::VectorXd& x) -> Eigen::VectorXd { return 3 * x + Eigen::VectorXd::Ones(x.size()); };
  FixedPointOptions o;
  o.method = FixedPointMethod::damped;
  o.damping = 1.0;
  o.max_iterations = 5;
  FixedPointSummary s;
  solve_fixed_point(doubling, Eigen::VectorXd::Zero(1), o, s);
  CHECK_FALSE(s.converged);
  CHECK(s.iterations == 5);
  CHECK(s.message.find("no convergence in 5 iterations") != std::string::npos);
  CHECK(s.brief().find("NOT converged") != std::string::npos);
  const VectorFunction nan_map = [](const Eigen::VectorXd& x) -> Eigen::VectorXd { return x.array() * std::nan(""); };
  CHECK_THROWS_AS(solve_fixed_point(nan_map, Eigen::VectorXd::Ones(1), o, s), NumericalError);
  for (auto bad : {+[](FixedPointOptions& b) { b.damping = 0; }, +[](FixedPointOptions& b) { b.damping = 1.5; },
                   +[](FixedPointOptions& b) { b.anderson_memory = 0; }, +[](FixedPointOptions& b) { b.tolerance = -1; },
                   +[](FixedPointOptions& b) { b.max_iterations = 0; }, +[](FixedPointOptions& b) { b.jacobian_step = 0; }}) {
    FixedPointOptions b;
    bad(b);
    CHECK_THROWS_AS(b.validate(), std::invalid_argument);
    CHECK_THROWS_AS(solve_fixed_point(doubling, Eigen::VectorXd::Zero(1), b, s), std::invalid_argument);
  }
  CHECK(fixed_point_method_from_name("newton") == FixedPointMethod::newton);
  CHECK_THROWS_AS(fixed_point_method_from_name("bisection"), std::invalid_argument);
}

TEST_CASE("the central-difference Jacobian matches the analytic one to O(h^2)") {
  const VectorFunction f = [](const Eigen::VectorXd& v) -> Eigen::VectorXd {
    return Eigen::Vector3d(std::sin(v(0)) * v(1), v(0) * v(0) * v(1), std::exp(v(1)));
  };
  const Eigen::Vector2d x(0.3, 1.7);
  Eigen::Matrix<double, 3, 2> exact;
  exact << std::cos(x(0)) * x(1), std::sin(x(0)), 2 * x(0) * x(1), x(0) * x(0), 0, std::exp(x(1));
  const Eigen::MatrixXd J = central_difference_jacobian(f, x, 1e-5);
  REQUIRE(J.rows() == 3);
  REQUIRE(J.cols() == 2);
  CHECK((J - exact).cwiseAbs().maxCoeff() < 1e-8);
}
