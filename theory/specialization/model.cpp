#include "hdat/specialization/model.hpp"

#include <fmt/format.h>

#include <initializer_list>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>

#include "hdat/core/error.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/model.hpp"
#include "hdat/core/random.hpp"
#include "hdat/core/verdict.hpp"

namespace hdat::specialization {

int Prior::F() const {
  switch (kind) {
    case Kind::gaussian: return static_cast<int>(mean.size());
    case Kind::discrete: return static_cast<int>(points.cols());
    case Kind::signs: return static_cast<int>(amplitudes.size());
  }
  return 0;
}

Eigen::VectorXd Prior::mean_vector() const {
  switch (kind) {
    case Kind::gaussian: return mean;
    case Kind::discrete: return points.transpose() * probs;
    case Kind::signs: return Eigen::VectorXd::Zero(amplitudes.size());
  }
  return {};
}

Eigen::VectorXd Prior::variance() const {
  switch (kind) {
    case Kind::gaussian: return std.array().square();
    case Kind::discrete: {
      const Eigen::VectorXd mu = mean_vector();
      Eigen::VectorXd v = Eigen::VectorXd::Zero(points.cols());
      for (int k = 0; k < points.rows(); ++k) v += probs(k) * (points.row(k).transpose() - mu).array().square().matrix();
      return v;
    }
    case Kind::signs: return amplitudes.array().square();
  }
  return {};
}

void Prior::sample(rng::Engine& engine, Eigen::VectorXd& theta) const {
  boost::random::normal_distribution<double> normal;
  const int n = F();
  switch (kind) {
    case Kind::gaussian:
      for (int f = 0; f < n; ++f) theta(f) = mean(f) + std(f) * normal(engine);
      break;
    case Kind::discrete: {
      const double u = boost::random::uniform_01<double>()(engine);
      int k = 0;
      double c = probs(0);
      while (u > c && k + 1 < probs.size()) c += probs(++k);
      theta = points.row(k).transpose();
      break;
    }
    case Kind::signs:
      for (int f = 0; f < n; ++f) theta(f) = (boost::random::uniform_01<double>()(engine) < 0.5 ? -1.0 : 1.0) * amplitudes(f);
      break;
  }
}

void Prior::from_normals(const double* z, Eigen::VectorXd& theta) const {
  const int n = F();
  if (kind == Kind::gaussian)
    for (int f = 0; f < n; ++f) theta(f) = mean(f) + std(f) * z[f];
  else if (kind == Kind::signs)
    for (int f = 0; f < n; ++f) theta(f) = z[f] >= 0 ? amplitudes(f) : -amplitudes(f);
  else
    throw std::logic_error("Prior::from_normals: a discrete prior is enumerated, not sampled");
}

Eigen::VectorXd Config::logit_offset(const Eigen::VectorXd& key_norms, const Eigen::VectorXd& b) const {
  switch (activation) {
    case Activation::bayes: return -0.5 * key_norms + b;
    case Activation::softmax1: return b;
    case Activation::softmax: break;
  }
  return Eigen::VectorXd::Zero(key_norms.size());
}

Attention Config::attention() const { return Attention(activation, aggregation, L, H); }

StateLayout Config::layout() const {
  StateLayout l;
  l.add("M", H, F).add("R", H, H, /*symmetric=*/true);
  if (train_bias) l.add_vector("b", H);
  return l;
}

Eigen::VectorXd Config::bias_in(const Eigen::VectorXd& x) const {
  if (!train_bias) return bias;
  return layout().view(x, "b");
}

Activation activation_from(const std::string& name) {
  if (name == "softmax") return Activation::softmax;
  if (name == "softmax1") return Activation::softmax1;
  if (name == "bayes") return Activation::bayes;
  throw InputError("activation", "expected softmax|softmax1|bayes, got '" + name + "'");
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::softmax: return "softmax";
    case Activation::softmax1: return "softmax1";
    case Activation::bayes: return "bayes";
  }
  return "?";
}

namespace {

bool is(const Params& p, const std::string& key, const std::string& value) { return p.text(key) == value; }
bool activation_in(const Params& p, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (is(p, "activation", n)) return true;
  return false;
}
// An offset of all of a head's logits acts for softmax1 (against the zero logit) and for bayes with
// more than one head (through the shared normalisation); for softmax it cancels in each head's own.
bool bias_acts(const Params& p) { return is(p, "activation", "softmax1") || (is(p, "activation", "bayes") && p.integer("H") > 1); }
const char* kBiasCondition =
    "activation is softmax1, or bayes with H > 1 (for softmax a per-head offset of the logits cancels in each head's "
    "normalisation, for bayes with one head in the joint one: it would do nothing)";

}  // namespace

StandardDefaults standard_defaults() {
  StandardDefaults d;
  d.t_max = 100;
  d.n_points = 120;
  d.rtol = 1e-6;
  d.atol = 1e-9;
  d.seeds = 8;
  d.dims = {250, 500, 1000, 2000};
  d.rel_tolerance = 0.05;
  d.theory_replicas = 4;
  d.drift_samples = 4000;
  d.drift_times = {0, 5, 20};
  d.size_key = "D";
  d.start_draw = true;
  return d;
}

const ParamSet& parameters() {
  static const ParamSet set = [] {
    ParamSet p;
    // The model (spec "Parameters").
    p.integer("D", 1000,
              "dimension D (simulate; and the O(1/sqrt D) asymmetry of the theory's initial overlaps in curve and "
              "analyze analysis=activations); at most 10^7 (the weights and data of a run are D-dimensional)",
              Range::between(2, 1e7))
        .integer("L", 4, "tokens per sequence", Range::between(1, 4096))
        .integer("F", 2, "latent spikes (features)", Range::between(1, 256))
        .integer("H", 2, "attention heads", Range::between(1, 256))
        .real("eta", 1.0, "learning rate eta (time t = steps / D)", Range::positive())
        .real("noise", 0.1, "label noise Delta (y = x_eps.v*/sqrt(D) + Delta xi)", Range::nonnegative())
        .integer("batch", 1, "fresh samples averaged per SGD step (the eta^2 term scales as 1/batch)", Range::at_least(1))
        .choice("activation", "bayes", {"softmax", "softmax1", "bayes"},
                "softmax per head | softmax with an extra zero logit | one softmax over heads x tokens with norm offset")
        .choice("aggregation", "mean", {"mean", "sum"}, "combination of per-head weights (softmax, softmax1): c_h = 1/H or 1")
        .when("activation is softmax or softmax1 and H > 1 (bayes has one joint normalisation; with one head c = 1 either way)",
              [](const Params& q) { return activation_in(q, {"softmax", "softmax1"}) && q.integer("H") > 1; }, {"activation", "H"})
        .real_list("bias", nullptr,
                   "b_h, per-head offset of the logits: softmax1 logits chi_hl + b_h against the fixed zero logit; bayes "
                   "log prior weights; with train_bias its initial value (default: zeros)")
        .when(kBiasCondition, bias_acts, {"activation", "H"})
        .boolean("train_bias", false,
                 "train b by online SGD, b_h <- b_h - (eta_bias / D) dloss/db_h: b becomes an order parameter (block b)")
        .when(kBiasCondition, bias_acts, {"activation", "H"})
        .real("eta_bias", 1.0, "learning rate of the bias (per step eta_bias / D, so b moves on t = steps / D)", Range::positive())
        .when_in("train_bias", {"true"})
        .choice("prior.kind", "gaussian", {"gaussian", "discrete", "signs"}, "prior of the spike amplitudes theta")
        .real_list("prior.mean", json::array({1.0, 1.0}), "gaussian prior: mean of theta (length F)")
        .when_in("prior.kind", {"gaussian"})
        .real_list("prior.std", json::array({1.5, 0.6}), "gaussian prior: standard deviations of theta (length F)", Range::nonnegative())
        .when_in("prior.kind", {"gaussian"})
        .real_matrix("prior.points", nullptr, "discrete prior: support points theta^k (K x F)")
        .when_in("prior.kind", {"discrete"})
        .real_list("prior.probs", nullptr, "discrete prior: probabilities p_k (default: uniform)", Range::nonnegative())
        .when_in("prior.kind", {"discrete"})
        .real_list("prior.amplitudes", nullptr, "signs prior: amplitudes a_f, theta_f = +-a_f (length F)", Range::nonnegative())
        .when_in("prior.kind", {"signs"})
        .real("prior.scale", 1.0, "signal amplitude: theta is multiplied by this factor (any prior kind; for sweeps)",
              Range::nonnegative())
        .real("init_std", 0.3, "sigma0: initial keys k_h ~ N(0, sigma0^2 I_D)", Range::nonnegative())
        .real_matrix("M0", nullptr, "initial head-spike overlaps M (H x F) for the theory (curve, analyze)")
        .real_matrix("R0", nullptr, "initial head-head overlaps R (H x H, symmetric) for the theory (curve, analyze)")
        .real("asymmetry", 1.0,
              "scale of the O(1/sqrt D) fluctuations of the theory's initial overlaps (1: those of a random "
              "initialisation at dimension D; 0: exactly symmetric heads, which the D = infinity flow never leaves)",
              Range::between(0, 1))
        .when("M0 and R0 are not given (they fix the initial overlaps)", [](const Params& q) { return !q.has("M0"); }, {"M0"})
        // Theory numerics.
        .any("schedule", nullptr,
             "a schedule of eta over time: a schedule.json written by hdat optimize (or that JSON object); overrides eta")
        .integer("mc_samples", 20000, "Gaussian samples of the theory's expectations (common random numbers)", Range::at_least(64))
        .choice("sampling", "sobol", {"sobol", "mc"}, "sample set: randomised Sobol (QMC) or plain Monte Carlo")
        .real("split_threshold", 0.1,
              "a head has specialised when its row M_h is this far (Euclidean) from the mean row of all heads", Range::positive())
        .boolean("prune", false, "curve: add the pruning analysis (risk after removing heads) of the final state")
        // Simulation.
        .integer("test_size", 10000, "simulate, validate, analyze: fresh test sequences per seed and time for the simulated risk",
                 Range::at_least(1))
        .choice("engine", "reduced", {"reduced", "full"},
                "simulator: reduced = the exact chain of the Gram matrix of keys, value and spikes (the law of D-dimensional "
                "online SGD, cost per step independent of D; derivation.md, the exact reduced simulator) | full = the "
                "D-dimensional weights")
        .choice("test_mode", "projected", {"projected", "full"},
                "test sequences: drawn in span(K*, v*, keys) only (exactly the same law, L(F+1+H) draws each) or as full "
                "D-dimensional tokens")
        .when_in("engine", {"full"})
        // hdat analyze.
        .choice("analysis", "stability", {"stability", "activations"},
                "analyze: linear stability of the unspecialized phase | the activations compared at one setting (final risk "
                "against the Bayes risk, pruning, per-sequence gating of each head)")
        .real("t_relax", 300.0, "analyze: time along the symmetric flow before the Newton polish of the unspecialized fixed point",
              Range::nonnegative())
        .when_in("analysis", {"stability"})
        .boolean("compare", true, "analyze: measure escape times and the order of features in online SGD over dims x seeds")
        .when_in("analysis", {"stability"})
        .boolean("stages", true, "analyze: also linearise at the later plateaus of the theory's trajectory (after the first split)")
        .when("analysis is stability and H > 1", [](const Params& q) { return is(q, "analysis", "stability") && q.integer("H") > 1; },
              {"analysis", "H"})
        .any("variants", nullptr,
             "analyze analysis=activations: the variants compared, a list of objects of key overrides, e.g. "
             "[{\"activation\":\"softmax\"},{\"activation\":\"softmax1\",\"aggregation\":\"sum\",\"bias\":-3}] (a number as bias "
             "is every head's; an optional \"name\"); default: softmax, softmax1 (mean; sum with b = 0, b = -3, trained b; "
             "mean with trained b), bayes")
        .when_in("analysis", {"activations"});
    declare_standard_keys(p, standard_defaults());
    p.condition("start", "M0 and R0 are not given (they fix the initial overlaps)", [](const Params& q) { return !q.has("M0"); }, {"M0"});
    // The theory's own numerics, start and analyses: no finite run changes (the simulation hash).
    p.theory_only({"mc_samples", "sampling", "t_relax", "compare", "stages", "prune", "split_threshold", "M0", "R0", "asymmetry"});
    declare_break_term(p, {"eta2", "sign_gg", "bias_sign", "bias_logit"});
    p.condition("break_term",
                "break_term is not bias_sign or bias_logit, or the bias they break acts: bias_sign (the sign of the bias's drift) "
                "needs train_bias=true, bias_logit (b left out of the theory's logits) a given bias with train_bias=false",
                [](const Params& q) {
                  if (is(q, "break_term", "bias_sign")) return q.boolean("train_bias");
                  if (is(q, "break_term", "bias_logit")) return q.has("bias") && !q.boolean("train_bias");
                  return true;
                },
                {"break_term", "train_bias", "bias"});
    return p;
  }();
  return set;
}

namespace {
void require_length(const std::string& key, Eigen::Index got, Eigen::Index want, const std::string& what) {
  if (got != want) throw InputError(key, fmt::format("must have {} entries ({}), got {}", want, what, got));
}
}  // namespace

namespace {
// The schedule's controls must be this model's: eta only, positive.
std::shared_ptr<const Schedule> schedule_of(const Params& p) {
  if (!p.has("schedule")) return nullptr;
  auto s = std::make_shared<Schedule>(schedule_from_value(p.raw("schedule"), "schedule"));
  for (const auto& c : s->controls)
    if (c.control != "eta") throw InputError("schedule", "specialization schedules eta only, not '" + c.control + "'");
  if (!s->finals.empty()) throw InputError("schedule", "specialization has no test-time values (final)");
  return s;
}
}  // namespace

void check(const Params& p) {
  const int F = static_cast<int>(p.integer("F")), H = static_cast<int>(p.integer("H"));
  if (const auto s = schedule_of(p)) {
    if (const ControlSchedule* c = s->find("eta"))
      for (int k = 0; k <= 1000; ++k) {
        const double t = c->t_final * k / 1000, u = c->value(t);
        if (!(u >= 0)) throw InputError("schedule", fmt::format("the schedule takes eta to {:.6g} at t = {:.4g}; eta must be >= 0", u, t));
      }
  }
  const std::string kind = p.text("prior.kind");
  if (kind == "gaussian") {
    require_length("prior.mean", p.vector("prior.mean").size(), F, "one per feature, F");
    require_length("prior.std", p.vector("prior.std").size(), F, "one per feature, F");
  } else if (kind == "discrete") {
    if (!p.has("prior.points")) throw InputError("prior.points", "is required for prior.kind=discrete (a K x F matrix)");
    const Eigen::MatrixXd pts = p.matrix("prior.points");
    if (pts.cols() != F) throw InputError("prior.points", fmt::format("must have F = {} columns, got {}", F, pts.cols()));
    if (p.has("prior.probs")) {
      const Eigen::VectorXd pr = p.vector("prior.probs");
      require_length("prior.probs", pr.size(), pts.rows(), "one per support point");
      if (std::fabs(pr.sum() - 1.0) > 1e-9) throw InputError("prior.probs", fmt::format("must sum to 1, sums to {}", pr.sum()));
    }
  } else {
    if (!p.has("prior.amplitudes")) throw InputError("prior.amplitudes", "is required for prior.kind=signs (length F)");
    require_length("prior.amplitudes", p.vector("prior.amplitudes").size(), F, "one per feature, F");
  }
  if (p.has("bias")) require_length("bias", p.vector("bias").size(), H, "one per head, H");
  if (p.has("M0")) {
    const Eigen::MatrixXd M = p.matrix("M0");
    if (M.rows() != H || M.cols() != F) throw InputError("M0", fmt::format("must be H x F = {} x {}, got {} x {}", H, F, M.rows(), M.cols()));
  }
  if (p.has("R0")) {
    const Eigen::MatrixXd R = p.matrix("R0");
    if (R.rows() != H || R.cols() != H) throw InputError("R0", fmt::format("must be H x H = {} x {}, got {} x {}", H, H, R.rows(), R.cols()));
    if ((R - R.transpose()).cwiseAbs().maxCoeff() > 1e-12) throw InputError("R0", "must be symmetric");
  }
  if (p.has("M0") != p.has("R0")) throw InputError(p.has("M0") ? "R0" : "M0", "M0 and R0 must be given together");
  if (p.has("M0")) {
    const Eigen::MatrixXd M = p.matrix("M0"), R = p.matrix("R0");
    const double lo = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(R - M * M.transpose()).eigenvalues().minCoeff();
    if (lo < -1e-10) throw InputError("R0", fmt::format("R0 - M0 M0^T must be positive semidefinite (smallest eigenvalue {:.3g})", lo));
  }
  // t_points: the time rule of every dynamics model (hdat::Bound, hdat/core/harness.hpp).
}

Config Config::from(const Params& p) {
  Config s;
  s.D = static_cast<int>(p.integer("D"));
  s.L = static_cast<int>(p.integer("L"));
  s.F = static_cast<int>(p.integer("F"));
  s.H = static_cast<int>(p.integer("H"));
  s.eta = p.real("eta");
  s.noise = p.real("noise");
  s.batch = static_cast<int>(p.integer("batch"));
  s.activation = activation_from(p.text("activation"));
  s.aggregation = p.text("aggregation") == "sum" ? Aggregation::sum : Aggregation::mean;
  s.bias = p.has("bias") ? p.vector("bias") : Eigen::VectorXd::Zero(s.H);
  s.train_bias = p.boolean("train_bias");
  s.eta_bias = p.real("eta_bias");
  const std::string kind = p.text("prior.kind");
  if (kind == "gaussian") {
    s.prior.kind = Prior::Kind::gaussian;
    s.prior.mean = p.vector("prior.mean");
    s.prior.std = p.vector("prior.std");
  } else if (kind == "discrete") {
    s.prior.kind = Prior::Kind::discrete;
    s.prior.points = p.matrix("prior.points");
    s.prior.probs = p.has("prior.probs") ? p.vector("prior.probs")
                                         : Eigen::VectorXd::Constant(s.prior.points.rows(), 1.0 / static_cast<double>(s.prior.points.rows()));
  } else {
    s.prior.kind = Prior::Kind::signs;
    s.prior.amplitudes = p.vector("prior.amplitudes");
  }
  // prior.scale multiplies θ itself, whatever the prior.
  const double scale = p.real("prior.scale");
  s.prior.mean *= scale;
  s.prior.std *= scale;
  s.prior.points *= scale;
  s.prior.amplitudes *= scale;
  s.init_std = p.real("init_std");
  s.seed = static_cast<std::uint64_t>(p.integer("seed"));
  s.schedule = schedule_of(p);
  return s;
}

void initial_overlaps(const Params& p, const Config& s, Eigen::MatrixXd& M0, Eigen::MatrixXd& R0) {
  if (p.has("M0")) {
    M0 = p.matrix("M0");
    R0 = p.matrix("R0");
    return;
  }
  // Overlaps of H random keys k_h ~ N(0, σ0² I_D) with F orthogonal spikes of norm √D:
  // M_hf = σ0 n_hf / √D, and R = M Mᵀ + σ0² W / D with W the Gram matrix of the keys' components
  // orthogonal to the spikes (D − F Gaussian coordinates). `asymmetry` scales the deviations from
  // the expectations (M = 0, R = σ0² I).
  const double a = p.real("asymmetry");
  const int m = std::max(1, s.D - s.F);
  auto eng = rng::engine(s.seed, 0, rng::asymmetry);
  boost::random::normal_distribution<double> normal;
  Eigen::MatrixXd n(s.H, s.F), g(s.H, m);
  for (int h = 0; h < s.H; ++h)
    for (int f = 0; f < s.F; ++f) n(h, f) = normal(eng);
  for (int h = 0; h < s.H; ++h)
    for (int j = 0; j < m; ++j) g(h, j) = normal(eng);
  const double sd = s.init_std;
  M0 = a * sd * n / std::sqrt(static_cast<double>(s.D));
  const Eigen::MatrixXd W = g * g.transpose() / static_cast<double>(s.D);  // ≈ (1 − F/D) I
  const Eigen::MatrixXd expected = Eigen::MatrixXd::Identity(s.H, s.H) * (static_cast<double>(m) / s.D);
  R0 = M0 * M0.transpose() + sd * sd * (expected + a * (W - expected)) + sd * sd * (static_cast<double>(s.F) / s.D) *
       Eigen::MatrixXd::Identity(s.H, s.H) * (1.0 - a * a);
  R0 = 0.5 * (R0 + R0.transpose());
}

Eigen::VectorXd pack_state(const Config& s, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) {
  const StateLayout l = s.layout();
  Eigen::VectorXd x(l.size());
  l.view(x, "M") = M;
  l.view(x, "R") = R;
  if (s.train_bias) l.view(x, "b") = b.size() ? b : s.bias;
  return x;
}

}  // namespace hdat::specialization
