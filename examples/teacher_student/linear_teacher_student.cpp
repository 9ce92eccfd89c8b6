// The linear teacher-student through hdat's contract: parameters, theory, finite system, Dynamics,
// registry entry (linear_teacher_student.hpp has the equations).
#include "linear_teacher_student.hpp"

#include <fmt/format.h>

#include <boost/random/normal_distribution.hpp>
#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/random.hpp"

namespace teacher_student {

using hdat::DriftTerms;
using hdat::Observables;
using hdat::StateLayout;

namespace {

hdat::StandardDefaults standard_defaults() {
  hdat::StandardDefaults d;
  d.t_max = 10;
  d.n_points = 30;
  d.seeds = 8;
  d.dims = {250, 500, 1000};
  d.drift_samples = 20000;
  d.drift_times = {0, 2};
  d.size_key = "N";
  d.max_size = 1e6;
  return d;
}

const hdat::ParamSet& parameters() {
  static const hdat::ParamSet set = [] {
    using hdat::Range;
    hdat::ParamSet p;
    p.real("eta", 0.5, "learning rate (the error decays for 0 < eta < 2)", Range::open_between(0, 2))
        .real_matrix("T", hdat::json::array({{1.0, 0.3, 0.1}, {0.3, 1.0, 0.2}, {0.1, 0.2, 1.0}}),
                     "teacher overlaps W* W*^T / N (K x K, symmetric positive definite); K is its size")
        .real("noise", 0.0, "label noise standard deviation sigma", Range::nonnegative())
        .real("init_std", 0.5, "the student's weights at t = 0: i.i.d. N(0, init_std^2)", Range::positive())
        .integer("N", 1000, "input dimension of simulate", Range::between(2, 1000000))
        .real_matrix("R0", nullptr, "curve: initial student-teacher overlaps (with Q0; default: the seeds' mean at N)")
        .real_matrix("Q0", nullptr, "curve: initial student overlaps (with R0)");
    hdat::declare_standard_keys(p, standard_defaults());
    hdat::declare_break_term(p, {"eta", "eta2"});
    p.theory_only({"R0", "Q0"});  // the theory's start: no finite run changes (the simulation hash)
    return p;
  }();
  return set;
}

void check_square(const hdat::Params& p, const std::string& key, int K) {
  const Eigen::MatrixXd M = p.matrix(key);
  if (M.rows() != K || M.cols() != K) throw hdat::InputError(key, fmt::format("must be K x K = {} x {} like T, got {} x {}", K, K, M.rows(), M.cols()));
}

void check(const hdat::Params& p) {
  const Eigen::MatrixXd T = p.matrix("T");
  if (T.rows() != T.cols() || T.rows() < 1) throw hdat::InputError("T", "must be a square matrix");
  if (!T.isApprox(T.transpose(), 1e-12)) throw hdat::InputError("T", "must be symmetric");
  if (Eigen::LLT<Eigen::MatrixXd>(T).info() != Eigen::Success) throw hdat::InputError("T", "must be positive definite");
  if (p.has("R0") != p.has("Q0")) throw hdat::InputError(p.has("R0") ? "Q0" : "R0", "R0 and Q0 must be given together");
  if (p.has("R0")) {
    check_square(p, "R0", static_cast<int>(T.rows()));
    check_square(p, "Q0", static_cast<int>(T.rows()));
    const Eigen::MatrixXd Q = p.matrix("Q0");
    if (!Q.isApprox(Q.transpose(), 1e-12)) throw hdat::InputError("Q0", "must be symmetric");
  }
}

// eps = tr(T - R - R^T + Q) / 2: measured on the weights and predicted on the theory's state alike.
double generalisation_error(const Eigen::MatrixXd& T, const Eigen::Ref<const Eigen::MatrixXd>& R, const Eigen::Ref<const Eigen::MatrixXd>& Q) {
  return 0.5 * (T - R - R.transpose() + Q).trace();
}

// The drift in its two named terms (header): the gradient's, linear in eta, and the SGD noise's.
// A term named by break_term is zero (it stays listed, so that the drift check compares it by name).
class Theory final : public hdat::OdeTheory {
 public:
  explicit Theory(const Config& c) : c_(c), layout_(c.layout()) {}
  const StateLayout& layout() const override { return layout_; }

  void operator()(const hdat::ConstVecRef& x, hdat::VecRef dxdt, double t) const override { dxdt = terms(x, t).total(); }

  DriftTerms terms(const Eigen::VectorXd& x, double) const override {
    const auto R = layout_.view(x, "R");
    const auto Q = layout_.view(x, "Q");
    const Eigen::MatrixXd& T = c_.T;
    const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(c_.K(), c_.K());
    const double eta = c_.eta, sigma2 = c_.noise * c_.noise;
    Eigen::VectorXd gradient = Eigen::VectorXd::Zero(layout_.size()), noise = gradient;
    if (c_.broken_term != "eta") {
      layout_.view(gradient, "R") = eta * (T - R);
      layout_.view(gradient, "Q") = eta * (R + R.transpose() - 2.0 * Q);
    }
    if (c_.broken_term != "eta2") layout_.view(noise, "Q") = eta * eta * (T - R - R.transpose() + Q + sigma2 * I);
    DriftTerms out;
    out.add("eta", gradient).add("eta2", noise);
    return out;
  }

  Observables observe(const Eigen::VectorXd& x, double) const override {
    return Observables().add("eps", generalisation_error(c_.T, layout_.view(x, "R"), layout_.view(x, "Q")));
  }

 private:
  Config c_;
  StateLayout layout_;
};

// Online SGD at dimension N: one object is one seed's run (streams (seed, replica, teacher |
// student_init | training_data | drift_check)).
class OnlineSGD final : public hdat::FiniteSystem {
 public:
  OnlineSGD(const Config& c, int N, std::uint64_t replica)
      : c_(c), layout_(c.layout()), N_(N), data_(hdat::rng::engine(c.seed, replica, hdat::rng::training_data)),
        drift_(hdat::rng::engine(c.seed, replica, hdat::rng::drift_check)) {
    // The teacher with W* W*^T / N = T exactly: orthonormal rows scaled by sqrt(N), mixed by chol(T).
    auto teacher = hdat::rng::engine(c.seed, replica, hdat::rng::teacher);
    const Eigen::MatrixXd Z = gaussian(N, c.K(), teacher);
    const Eigen::MatrixXd basis = Eigen::HouseholderQR<Eigen::MatrixXd>(Z).householderQ() * Eigen::MatrixXd::Identity(N, c.K());
    W_star_ = Eigen::LLT<Eigen::MatrixXd>(c.T).matrixL() * (std::sqrt(double(N)) * basis.transpose());
    auto init = hdat::rng::engine(c.seed, replica, hdat::rng::student_init);
    W_ = c.init_std * gaussian(c.K(), N, init);
  }

  double time() const override { return static_cast<double>(steps_) / N_; }

  void advance_to(double t) override {
    const long target = std::lround(t * N_);
    Eigen::VectorXd x(N_);
    while (steps_ < target) {
      draw(x, data_);
      const Eigen::VectorXd e = error(x, data_);
      W_.noalias() += (c_.eta / std::sqrt(double(N_))) * e * x.transpose();
      ++steps_;
    }
  }

  Eigen::VectorXd state() const override {
    Eigen::VectorXd s = Eigen::VectorXd::Zero(layout_.size());
    layout_.view(s, "R") = W_ * W_star_.transpose() / N_;
    layout_.view(s, "Q") = W_ * W_.transpose() / N_;
    return s;
  }

  Observables observe() override {
    const Eigen::VectorXd s = state();
    return Observables().add("eps", generalisation_error(c_.T, layout_.view(s, "R"), layout_.view(s, "Q")));
  }

  // One step's change of (R, Q) times N (the step's dt is 1/N), in the theory's terms, not applied:
  //   eta:  N dR = eta e nu^T,   N dQ = eta (e lambda^T + lambda e^T)
  //   eta2: N dQ = N dW dW^T = eta^2 e e^T |x|^2 / N
  DriftTerms increment() override {
    Eigen::VectorXd x(N_);
    draw(x, drift_);
    const Eigen::VectorXd e = error(x, drift_);
    const Eigen::VectorXd nu = W_star_ * x / std::sqrt(double(N_)), lambda = W_ * x / std::sqrt(double(N_));
    Eigen::VectorXd gradient = Eigen::VectorXd::Zero(layout_.size()), noise = gradient;
    layout_.view(gradient, "R") = c_.eta * e * nu.transpose();
    layout_.view(gradient, "Q") = c_.eta * (e * lambda.transpose() + lambda * e.transpose());
    layout_.view(noise, "Q") = c_.eta * c_.eta * x.squaredNorm() / N_ * e * e.transpose();
    DriftTerms out;
    out.add("eta", gradient).add("eta2", noise);
    return out;
  }

 private:
  static Eigen::MatrixXd gaussian(int rows, int cols, hdat::rng::Engine& g) {
    boost::random::normal_distribution<double> normal;
    Eigen::MatrixXd m(rows, cols);
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      for (Eigen::Index i = 0; i < m.rows(); ++i) m(i, j) = normal(g);
    return m;
  }
  static void draw(Eigen::VectorXd& x, hdat::rng::Engine& g) {
    boost::random::normal_distribution<double> normal;
    for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = normal(g);
  }
  // y - y^ for input x: the teacher's and the student's fields nu, lambda and the label noise.
  Eigen::VectorXd error(const Eigen::VectorXd& x, hdat::rng::Engine& g) const {
    Eigen::VectorXd e = (W_star_ - W_) * x / std::sqrt(double(N_));
    if (c_.noise > 0) {
      boost::random::normal_distribution<double> normal;
      for (Eigen::Index k = 0; k < e.size(); ++k) e(k) += c_.noise * normal(g);
    }
    return e;
  }

  Config c_;
  StateLayout layout_;
  int N_;
  Eigen::MatrixXd W_star_, W_;
  long steps_ = 0;
  hdat::rng::Engine data_, drift_;
};

// The model at one configuration.
class Dynamics final : public hdat::Dynamics {
 public:
  explicit Dynamics(const hdat::Params& p)
      : c_(Config::from(p)), settings_(hdat::standard_settings(p, standard_defaults(), c_.layout())) {
    if (p.has("R0")) {
      given_start_ = Eigen::VectorXd::Zero(c_.layout().size());
      c_.layout().view(*given_start_, "R") = p.matrix("R0");
      c_.layout().view(*given_start_, "Q") = p.matrix("Q0");
    }
  }
  hdat::DynamicsSettings settings() const override { return settings_; }
  StateLayout layout() const override { return c_.layout(); }
  std::unique_ptr<hdat::OdeTheory> theory(int) const override { return std::make_unique<Theory>(c_); }  // exact: no sample sets
  // R0/Q0 when given, else the expectation at t = 0 (R = 0, Q = init_std^2 I).
  Eigen::VectorXd initial_state(const hdat::OdeTheory&) const override {
    if (given_start_) return *given_start_;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(c_.layout().size());
    c_.layout().view(x, "Q") = c_.init_std * c_.init_std * Eigen::MatrixXd::Identity(c_.K(), c_.K());
    return x;
  }
  std::optional<Eigen::VectorXd> replica_initial_state(std::uint64_t replica) const override { return OnlineSGD(c_, c_.N, replica).state(); }
  std::unique_ptr<hdat::FiniteSystem> system(double size, std::uint64_t replica) const override {
    return std::make_unique<OnlineSGD>(c_, static_cast<int>(size), replica);
  }
  std::string describe() const override { return fmt::format("K={}, eta={}, noise={}", c_.K(), c_.eta, c_.noise); }

 private:
  Config c_;
  hdat::DynamicsSettings settings_;
  std::optional<Eigen::VectorXd> given_start_;
};

}  // namespace

StateLayout Config::layout() const {
  StateLayout l;
  l.add("R", K(), K()).add("Q", K(), K(), /*symmetric=*/true);
  return l;
}

Config Config::from(const hdat::Params& p) {
  Config c;
  c.T = p.matrix("T");
  c.eta = p.real("eta");
  c.noise = p.real("noise");
  c.init_std = p.real("init_std");
  c.N = static_cast<int>(p.integer("N"));
  c.seed = static_cast<std::uint64_t>(p.integer("seed"));
  c.broken_term = p.text("break_term");
  return c;
}

Eigen::VectorXd closed_form(const Config& c, const Eigen::VectorXd& x0, double t) {
  const StateLayout layout = c.layout();
  const auto R0 = layout.view(x0, "R");
  const auto Q0 = layout.view(x0, "Q");
  const Eigen::MatrixXd E0 = c.T - R0 - R0.transpose() + Q0;
  const Eigen::MatrixXd R = c.T - (c.T - R0) * std::exp(-c.eta * t);
  const Eigen::MatrixXd E = E0 * std::exp(-c.eta * (2 - c.eta) * t);
  Eigen::VectorXd x(layout.size());
  layout.view(x, "R") = R;
  layout.view(x, "Q") = E - c.T + R + R.transpose();
  return x;
}

hdat::ModelEntry entry() {
  hdat::ModelEntry e;
  e.name = "teacher-student";
  e.summary = "linear teacher-student: online SGD of a linear student against its N = infinity order-parameter ODE (an example model)";
  e.description =
      "A K-output linear student y^ = W x / sqrt N learns a linear teacher W* by online SGD; the overlaps R = W W*^T / N and\n"
      "Q = W W^T / N follow a closed linear ODE (examples/teacher_student/linear_teacher_student.hpp).";
  e.params = parameters();
  e.check = check;
  auto model = std::make_shared<hdat::DynamicsModel>();
  model->bind = hdat::dynamics_of<Dynamics>();
  model->start_keys = {"R0", "Q0"};
  hdat::add_dynamics_commands(e, model);
  e.default_observables = {"final:eps"};
  e.command_observables["simulate"] = {"final:eps"};
  return e;
}

}  // namespace teacher_student
