// A system of your own, integrated by hdat's engine: online SGD of a linear student learning a linear
// teacher with K outputs, in the limit of input dimension N -> infinity.
//
// Teacher y = W* x / sqrt(N), student y^ = W x / sqrt(N), x ~ N(0, I_N), loss |y - y^|^2 / 2, one step
// W += eta (y - y^) x^T / sqrt(N) per sample; time alpha = samples / N. The order parameters
//   R = W W*^T / N (K x K, the student-teacher overlaps),  Q = W W^T / N (K x K, symmetric),
// with T = W* W*^T / N fixed, follow (averaging the step over x; the eta^2 term is the SGD noise)
//   dR/dalpha = eta (T - R),
//   dQ/dalpha = eta (R + R^T - 2 Q) + eta^2 (T - R - R^T + Q).
// The error matrix E = T - R - R^T + Q then obeys dE/dalpha = -eta (2 - eta) E, so in closed form
//   R(alpha) = T - (T - R0) exp(-eta alpha),  E(alpha) = E0 exp(-eta (2 - eta) alpha),
// and the generalisation error is eps = tr(E) / 2. The program integrates the ODE with hdat::integrate
// and checks every observed state against the closed form (exit 0 when they agree, 1 otherwise).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "hdat/core/error.hpp"
#include "hdat/core/integrate.hpp"
#include "hdat/core/layout.hpp"
#include "hdat/core/params.hpp"

// The example's parameters, declared once with their defaults, ranges and meaning; arguments
// key=value override them (e.g. `teacher_student eta=1.5 alpha_max=80`).
hdat::ParamSet parameters() {
  hdat::ParamSet p;
  p.real("eta", 0.5, "learning rate (the error decays for 0 < eta < 2)", hdat::Range::open_between(0, 2));
  p.real_matrix("T", hdat::json::array({{1.0, 0.3, 0.1}, {0.3, 1.0, 0.2}, {0.1, 0.2, 1.0}}), "teacher overlaps W* W*^T / N (K x K)");
  p.real("alpha_max", 40.0, "last observation time", hdat::Range::positive());
  return p;
}

int main(int argc, char** argv) try {
  std::vector<std::pair<std::string, hdat::json>> assignments;
  for (int i = 1; i < argc; ++i) assignments.push_back(hdat::parse_assignment(argv[i]));
  const hdat::Params params = hdat::resolve(parameters(), nullptr, assignments);
  const double eta = params.real("eta");
  const Eigen::MatrixXd T = params.matrix("T");
  const int K = static_cast<int>(T.rows());
  if (T.cols() != K || !T.isApprox(T.transpose())) throw hdat::InputError("T", "must be a symmetric square matrix");

  hdat::StateLayout layout;
  layout.add("R", K, K).add("Q", K, K, /*symmetric=*/true);

  // Initial student: small overlaps with the teacher, norm 0.5 per output.
  Eigen::VectorXd x0 = Eigen::VectorXd::Zero(layout.size());
  auto R0 = layout.view(x0, "R");
  auto Q0 = layout.view(x0, "Q");
  R0 = 0.05 * Eigen::MatrixXd::Identity(K, K);
  Q0 = 0.5 * Eigen::MatrixXd::Identity(K, K);
  const Eigen::MatrixXd R_init = R0, E_init = T - R0 - R0.transpose() + Q0;

  // The right-hand side reads like the equations above.
  const hdat::OdeSystem rhs = [&](const hdat::ConstVecRef& x, hdat::VecRef dxdt, double /*alpha*/) {
    const auto R = layout.view(x.data(), "R");
    const auto Q = layout.view(x.data(), "Q");
    auto dR = layout.view(dxdt.data(), "R");
    auto dQ = layout.view(dxdt.data(), "Q");
    dR = eta * (T - R);
    dQ = eta * (R + R.transpose() - 2.0 * Q) + eta * eta * (T - R - R.transpose() + Q);
  };

  double worst = 0.0;  // largest deviation from the closed form over all observations
  int observed = 0;
  const hdat::OdeObserver observe = [&](double alpha, const Eigen::VectorXd& x) {
    const auto R = layout.view(x, "R");
    const auto Q = layout.view(x, "Q");
    const Eigen::MatrixXd R_exact = T - (T - R_init) * std::exp(-eta * alpha);
    const Eigen::MatrixXd E_exact = E_init * std::exp(-eta * (2.0 - eta) * alpha);
    const Eigen::MatrixXd Q_exact = E_exact - T + R_exact + R_exact.transpose();
    const double deviation = std::max((R - R_exact).cwiseAbs().maxCoeff(), (Q - Q_exact).cwiseAbs().maxCoeff());
    worst = std::max(worst, deviation);
    const double eps = 0.5 * (T - R - R.transpose() + Q).trace();
    if (observed++ % 8 == 0) std::printf("alpha %10.4f   eps %.6e   exact %.6e\n", alpha, eps, 0.5 * E_exact.trace());
    return true;
  };

  hdat::IntegrateOptions options;  // Options in ...
  options.rtol = 1e-10;
  options.atol = 1e-12;
  options.component_name = [&](int k) { return layout.component_name(k); };
  const std::vector<double> times = hdat::log_spaced(1e-2, params.real("alpha_max"), 41);  // 0, then log-spaced
  const hdat::IntegrateSummary summary = hdat::integrate(rhs, x0, 0.0, times, observe, options);  // ... Summary out
  std::printf("%s\n", summary.report().c_str());

  const double allowed = 1e-7;
  const bool agree = summary.ok() && observed == static_cast<int>(times.size()) && worst < allowed;
  std::printf("%d observations, largest deviation from the closed form %.3e (allowed %.0e): %s\n", observed, worst, allowed,
              agree ? "agree" : "DISAGREE");
  return agree ? 0 : 1;
} catch (const hdat::InputError& e) {
  std::fprintf(stderr, "teacher_student: %s\n", e.what());
  return 2;
}
