// The committee model's parameters (spec "Parameters"): declared once, read by the theory, the
// simulator and the harness.
#include <fmt/format.h>

#include <limits>

#include "hdat/committee/model.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/model.hpp"

namespace hdat::committee {

namespace {
bool trains_v(const Params& p) { return p.boolean("train_v"); }

void require_length(const std::string& key, Eigen::Index got, long want, const std::string& what) {
  if (got != want) throw InputError(key, fmt::format("must have {} entries ({}), got {}", want, what, got));
}

void require_shape(const std::string& key, const Eigen::MatrixXd& m, long rows, long cols, const std::string& what) {
  if (m.rows() != rows || m.cols() != cols)
    throw InputError(key, fmt::format("must be {} x {} ({}), got {} x {}", rows, cols, what, m.rows(), m.cols()));
}
}  // namespace

ParamSet& declare_model_keys(ParamSet& p) {
  p.integer("N", 500, "input dimension N (simulator; sets the O(1/sqrt N) initial asymmetry of the theory's start); at most 10^7 (a run holds N (K + M) weights)",
            Range::between(1, 1e7))
      .integer("K", 2, "student hidden units K", Range::between(1, 100))
      .integer("M", 2, "teacher hidden units M", Range::between(1, 100))
      .choice("activation", "erf", {"erf", "linear"}, "g(u) = erf(u/sqrt 2) (Saad-Solla, nn2pp) | g(u) = u")
      .real("eta", 0.5, "first-layer learning rate eta (w_k += (eta/sqrt N) v_k g'(lambda_k) Delta x; t = steps/N)", Range::positive())
      .boolean("train_v", false, "train the second layer v too (v_k += (eta_v/N) g(lambda_k) Delta)")
      .real("eta_v", nullptr, "second-layer learning rate eta_v (default: eta)", Range::positive())
      .when("train_v is true", trains_v, {"train_v"})
      .real("noise", 0.0, "label noise sigma (y = sum_m v*_m g(nu_m) + sigma zeta)", Range::nonnegative())
      .real("wd", 0.0, "weight decay of the first layer (w_k -= (wd/N) w_k per step)", Range::nonnegative())
      .real_list("vstar", nullptr, "teacher second layer v* (length M; default: ones)")
      .real_list("v0", nullptr, "student second layer v at t = 0 (length K; default: ones; constant unless train_v)")
      .choice("teacher", "orthonormal", {"orthonormal", "gaussian"},
              "teacher first layer: orthonormal (w*_m . w*_n = N delta_mn, T = I exactly) | gaussian (w*_m ~ N(0, I_N))")
      .real("init_std", 1.0, "initial student weights w_k ~ N(0, init_std^2 I_N)", Range::nonnegative())
      .real_matrix("Q0", nullptr, "initial student-student overlaps Q (K x K, symmetric) for the theory (with R0, T0)")
      .real_matrix("R0", nullptr, "initial student-teacher overlaps R (K x M) for the theory (with Q0, T0)")
      .real_matrix("T0", nullptr, "teacher-teacher overlaps T (M x M, symmetric) for the theory (with Q0, R0)")
      .integer("test_size", 2000, "simulator: fresh test inputs per observation for eg_test (0: none)", Range::at_least(0))
      .real("dropout_keep", 1.0,
            "dropout: each student unit is kept with probability r at every training step (a dropped unit neither "
            "contributes nor learns); 1: no dropout",
            Range{0.0, 1.0, true, false})
      .real("test_scale", 1.0, "p_f: at test time the student's output is scaled by p_f (eg, eg_test)", Range::nonnegative())
      .any("schedule", nullptr,
           "schedules of eta and dropout_keep over time and the final test_scale: a schedule.json written by hdat optimize "
           "(or that JSON object); overrides the constants")
      .choice("engine", "reduced", {"reduced", "full"},
              "simulator: reduced = the exact chain of the weights' Gram matrix (the law of full online SGD, cost per step "
              "independent of N; derivation.md section 8) | full = the N-dimensional weights");
  declare_break_term(p, term_names());
  return p;
}

namespace {
// The schedule's controls must be this model's: eta and dropout_keep over time, test_scale at the end.
std::shared_ptr<const Schedule> schedule_of(const Params& p) {
  if (!p.has("schedule")) return nullptr;
  auto s = std::make_shared<Schedule>(schedule_from_value(p.raw("schedule"), "schedule"));
  for (const auto& c : s->controls)
    if (c.control != "eta" && c.control != "dropout_keep")
      throw InputError("schedule", "committee schedules eta and dropout_keep only, not '" + c.control + "'");
  for (const auto& [name, value] : s->finals)
    if (name != "test_scale") throw InputError("schedule", "committee's only final value is test_scale, not '" + name + "'");
  return s;
}
}  // namespace

void check(const Params& p) {
  const long K = p.integer("K"), M = p.integer("M");
  if (const auto s = schedule_of(p)) {
    const auto bad = [&](const char* control, double lo, bool lo_open, double hi) {
      const ControlSchedule* c = s->find(control);
      if (!c) return;
      for (double t = 0; t <= c->t_final * (1 + 1e-12); t += c->t_final / 1000) {
        const double u = c->value(t);
        if (!(lo_open ? u > lo : u >= lo) || u > hi)
          throw InputError("schedule", fmt::format("the schedule takes {} to {:.6g} at t = {:.4g}, outside {}{}, {}]", control, u, t,
                                                   lo_open ? "(" : "[", lo, hi));
      }
    };
    bad("eta", 0.0, true, std::numeric_limits<double>::infinity());
    bad("dropout_keep", 0.0, false, 1.0);
    if (s->final_value("test_scale", 1.0) < 0) throw InputError("schedule", "test_scale must be >= 0");
  }
  if (p.has("vstar")) require_length("vstar", p.vector("vstar").size(), M, "one per teacher unit, M");
  if (p.has("v0")) require_length("v0", p.vector("v0").size(), K, "one per student unit, K");
  if (p.text("teacher") == "orthonormal" && p.integer("N") < M)
    throw InputError("N", fmt::format("must be at least M = {} for an orthonormal teacher", M));
  const bool q = p.has("Q0"), r = p.has("R0"), t = p.has("T0");
  if (q || r || t) {
    for (const auto& [key, given] : {std::pair{"Q0", q}, std::pair{"R0", r}, std::pair{"T0", t}})
      if (!given) throw InputError(key, "Q0, R0 and T0 must be given together");
    const Eigen::MatrixXd Q = p.matrix("Q0"), R = p.matrix("R0"), T = p.matrix("T0");
    require_shape("Q0", Q, K, K, "K x K");
    require_shape("R0", R, K, M, "K x M");
    require_shape("T0", T, M, M, "M x M");
    if ((Q - Q.transpose()).cwiseAbs().maxCoeff() > 1e-12) throw InputError("Q0", "must be symmetric");
    if ((T - T.transpose()).cwiseAbs().maxCoeff() > 1e-12) throw InputError("T0", "must be symmetric");
    Eigen::MatrixXd C;
    field_covariance(Q, R, T, C);
    const double lowest = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(C).eigenvalues().minCoeff();
    if (lowest < -1e-10)
      throw InputError("Q0", fmt::format("[[Q0, R0], [R0^T, T0]] must be positive semidefinite (overlaps of actual vectors); "
                                         "its smallest eigenvalue is {:.3g}",
                                         lowest));
  }
}

Config Config::from(const Params& p) {
  Config s;
  s.N = static_cast<int>(p.integer("N"));
  s.K = static_cast<int>(p.integer("K"));
  s.M = static_cast<int>(p.integer("M"));
  s.activation = activation_from(p.text("activation"));
  s.eta = p.real("eta");
  s.train_v = p.boolean("train_v");
  s.eta_v = p.has("eta_v") ? p.real("eta_v") : s.eta;
  s.noise = p.real("noise");
  s.wd = p.real("wd");
  s.vstar = p.has("vstar") ? p.vector("vstar") : Eigen::VectorXd::Ones(s.M);
  s.v0 = p.has("v0") ? p.vector("v0") : Eigen::VectorXd::Ones(s.K);
  s.teacher = p.text("teacher") == "gaussian" ? TeacherKind::gaussian : TeacherKind::orthonormal;
  s.init_std = p.real("init_std");
  if (p.has("seed")) s.seed = static_cast<std::uint64_t>(p.integer("seed"));
  s.broken_term = p.text("break_term");
  s.dropout_keep = p.real("dropout_keep");
  s.test_scale = p.real("test_scale");
  s.schedule = schedule_of(p);
  if (s.schedule) s.test_scale = s.schedule->final_value("test_scale", s.test_scale);
  return s;
}

Eigen::VectorXd given_initial_state(const Params& p, const Config& s) {
  if (!p.has("Q0")) throw InputError("Q0", "no initial overlaps given (Q0, R0, T0)");
  Overlaps o;
  o.Q = p.matrix("Q0");
  o.R = p.matrix("R0");
  o.T = p.matrix("T0");
  o.v = s.v0;
  return pack(s, o);
}

}  // namespace hdat::committee
