#include "hdat/polarization/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/core/integrate.hpp"
#include "hdat/core/model.hpp"

namespace hdat::polarization {

std::string name(Loss l) {
  switch (l) {
    case Loss::logistic: return "logistic";
    case Loss::square: return "square";
    case Loss::regression: return "regression";
    case Loss::xent: return "xent";
  }
  return "?";
}

std::string name(Normalization n) {
  switch (n) {
    case Normalization::softmax: return "softmax";
    case Normalization::square: return "square";
    case Normalization::sum: return "sum";
    case Normalization::l1: return "l1";
    case Normalization::relu: return "relu";
    case Normalization::sigmoid: return "sigmoid";
    case Normalization::elementwise_relu: return "elementwise_relu";
  }
  return "?";
}

std::string name(Architecture a) { return a == Architecture::value ? "value" : "tied"; }

std::string name(Init i) {
  switch (i) {
    case Init::random: return "random";
    case Init::explicit_values: return "explicit";
    case Init::numpy: return "numpy";
    case Init::numpy_target_first: return "numpy_target_first";
  }
  return "?";
}

std::string name(FlowKind f) { return f == FlowKind::reduced ? "reduced" : "full"; }

namespace {

Loss parse_loss(const std::string& s) {
  if (s == "logistic") return Loss::logistic;
  if (s == "square") return Loss::square;
  if (s == "regression") return Loss::regression;
  if (s == "xent") return Loss::xent;
  throw InputError("loss", "unknown loss '" + s + "'");
}

Normalization parse_normalization(const std::string& s) {
  for (auto n : {Normalization::softmax, Normalization::square, Normalization::sum, Normalization::l1, Normalization::relu,
                 Normalization::sigmoid, Normalization::elementwise_relu})
    if (name(n) == s) return n;
  throw InputError("normalization", "unknown normalization '" + s + "'");
}

Init parse_init(const std::string& s) {
  for (auto i : {Init::random, Init::explicit_values, Init::numpy, Init::numpy_target_first})
    if (name(i) == s) return i;
  throw InputError("init", "unknown init '" + s + "'");
}

}  // namespace

namespace {

bool times_not_listed(const Params& p) { return !p.has("t_points"); }

}  // namespace

ParamSet parameters() {
  ParamSet p;
  p.integer("T", 8, "tokens: length of the logits a and of the weights s = σ(a)", Range::between(2, 100000))
      .integer("d", 8, "value dimension (rows of V); the reduced flows do not depend on it", Range::between(1, 100000))
      .choice("loss", "logistic", {"logistic", "square", "regression", "xent"},
              "logistic: log(1+exp(-<β*,Vs>)); square: ½|Vs-β*|²; regression: |y-XVs|²; xent: cross-entropy of softmax(Vs) to p*")
      .choice("normalization", "softmax", {"softmax", "square", "sum", "l1", "relu", "sigmoid", "elementwise_relu"},
              "σ: softmax; f(a)/Σf with f = x² (square), x (sum), |x| (l1), max(x,0) (relu); element-wise sigmoid or relu")
      .choice("architecture", "value", {"value", "tied"}, "value: β = V σ(a); tied: β = U σ(U a), U ∈ R^{D×D}, D = d = T")
      .choice("flow", "auto", {"auto", "reduced", "full"},
              "what `curve` integrates: the closed reduction in (u,a) / (u,a,Q) (logistic, square) or the full (a,V) flow; auto: reduced where it exists")
      .choice("init", "random", {"random", "explicit", "numpy", "numpy_target_first"},
              "random: V0, a0, β* drawn from hdat streams of `seed`; explicit: u0 (Q0) and a0 given; numpy / numpy_target_first: the draws of the authors' NumPy scripts (legacy RandomState(seed)), see docs")
      .real("V0_std", 0.1, "V(0) entries ~ V0_std N(0,1)", Range::nonnegative())
      .when_in("architecture", {"value"})
      .real("a0_mean", 0.0, "a(0) = a0_mean + a0_std N(0,1)")
      .when_in("init", {"random", "numpy", "numpy_target_first"})
      .real("a0_std", 0.0, "a(0) = a0_mean + a0_std N(0,1)", Range::nonnegative())
      .when_in("init", {"random", "numpy", "numpy_target_first"})
      .real("U0_scale", 1.0, "tied model: U(0) = U0_scale I_D", Range::positive())
      .when_in("architecture", {"tied"})
      .integer("seed", 1, "random seed of every draw (V0, a0, β*, X, y, p*)", Range::between(0, 4294967295.0))
      .real_list("u0", nullptr, "init=explicit: u(0) = V(0)ᵀβ*, length T")
      .when_in("init", {"explicit"})
      .real_list("a0", nullptr, "explicit a(0), length T (overrides the drawn a(0) for any init)")
      .real_matrix("Q0", nullptr, "init=explicit, loss=square: Q(0) = V(0)ᵀV(0), T×T (default u0 u0ᵀ/|β*|², rank one)")
      .when("init is explicit and loss is square",
            [](const Params& q) { return q.text("init") == "explicit" && q.text("loss") == "square"; }, {"init", "loss"})
      .real("beta_norm", 1.0, "|β*| (the target direction is drawn uniformly, then scaled)", Range::positive())
      .when_in("loss", {"logistic", "square"})
      .real("kappa", 1.0, "regression: condition number of the design X (singular values linearly spaced in [1/κ, 1])", Range::at_least(1.0))
      .when_in("loss", {"regression"})
      .integer("n", nullptr, "regression: samples (rows of X); default d", Range::between(1, 100000))
      .when_in("loss", {"regression"})
      .real("target_sharpness", 10.0, "xent: p* = softmax(target_sharpness · Uniform[0,1)^d)", Range::nonnegative())
      .when_in("loss", {"xent"})
      .real_list("p_star", nullptr, "xent: explicit soft target (length d, positive, sums to 1)", Range::nonnegative())
      .when_in("loss", {"xent"})
      .real("lr", 0.1, "gradient-descent step η (simulate, validate); flow time t = η · steps", Range::positive())
      .real("t_max", 1e6, "final flow time (with t_points: at or past the last time; left out, the last time)", Range::positive())
      .real("t_min", 0.01, "first log-spaced observation time after t = 0", Range::positive())
      .when("t_points is not set", times_not_listed, {"t_points"})
      .integer("points", 200, "log-spaced observation times in [t_min, t_max] (after t = 0)", Range::between(2, 1000000))
      .when("t_points is not set", times_not_listed, {"t_points"})
      .real_list("t_points", nullptr, "explicit observation times, strictly increasing, in [0, t_max] (the flow starts at t = 0 whatever the first "
                 "time), instead of t_min, points", Range::nonnegative())
      .choice("stepper", "auto", {"auto", "dopri5", "rkf78", "cash_karp54", "rosenbrock4"},
              "ODE stepper; auto: dopri5 (see docs/polarization.md on stiffness after an exponential convergence)")
      .real("rtol", 1e-10, "relative tolerance of the integrator", Range::positive())
      .real("atol", 1e-12, "absolute tolerance of the integrator", Range::positive())
      .boolean("log_time", true, "integrate in τ = log(1 + t): flows spanning decades (t = 1e20 and beyond)")
      .integer("halvings", 2, "validate: gradient descent at lr, lr/2, ..., lr/2^halvings", Range::between(1, 8))
      .real("tolerance", 0.02, "validate: allowed |GD - flow| at the smallest step, in units of 1 + the block's largest |value|",
            Range::positive())
      .real("min_order", 0.7, "validate: smallest allowed observed order log2(gap(η)/gap(η/2)) (first order expected)", Range::between(0.0, 5.0))
      .choice("mode", "trajectory", {"trajectory", "drift"},
              "validate: whole trajectories at every step (with the drift check and the identities of every step), or the drift check alone")
      .real_list("drift_times", nlohmann::json(std::vector<double>{0.0, 1.0, 10.0}),
                 "validate: times at which one gradient step is checked against the flow's right-hand side", Range::nonnegative())
      .boolean("figures", true, "render figures (PNG, SVG) into the output folder")
      .choice("claim", "polarization", {"order", "polarization", "square", "regression", "normalizations", "tied", "sign"},
              "analyze: which claim of the paper to reproduce (see docs/polarization.md)");
  declare_break_term(p, {"replicator_sign"});
  // Neither a gradient-descent run nor its instance depends on these (the simulation hash).
  p.theory_only({"stepper", "rtol", "atol", "log_time", "halvings", "tolerance", "min_order", "mode", "drift_times", "figures", "claim"});
  return p;
}

std::vector<double> observation_times(const Params& p) {
  if (p.has("t_points")) {
    const Eigen::VectorXd tp = p.vector("t_points");
    std::vector<double> times(tp.data(), tp.data() + tp.size());
    return times;
  }
  return log_spaced(p.real("t_min"), p.real("t_max"), static_cast<int>(p.integer("points")), /*with_zero=*/true);
}

bool Config::reducible() const {
  return architecture == Architecture::value && (loss == Loss::logistic || loss == Loss::square);
}

void check(const Params& p) {
  const int T = static_cast<int>(p.integer("T"));
  const int d = static_cast<int>(p.integer("d"));
  const std::string loss = p.text("loss");
  const std::string arch = p.text("architecture");
  const std::string init = p.text("init");
  const bool reducible = arch == "value" && (loss == "logistic" || loss == "square");
  if (arch == "tied" && d != T) throw InputError("d", fmt::format("the tied model β = U σ(U a) needs d = T (got d = {}, T = {})", d, T));
  if (p.text("flow") == "reduced" && !reducible)
    throw InputError("flow", "the closed reduction exists for architecture=value with loss=logistic|square; use flow=auto or full");
  if (init == "explicit") {
    if (!p.has("u0")) throw InputError("u0", "init=explicit needs u0 (length T)");
    if (!reducible) throw InputError("init", "init=explicit (u0, Q0) is defined for architecture=value with loss=logistic|square");
  }
  if (p.has("u0") && p.vector("u0").size() != T)
    throw InputError("u0", fmt::format("must have length T = {} (got {})", T, p.vector("u0").size()));
  if (p.has("a0") && p.vector("a0").size() != T)
    throw InputError("a0", fmt::format("must have length T = {} (got {})", T, p.vector("a0").size()));
  if (p.has("Q0")) {
    const Eigen::MatrixXd Q = p.matrix("Q0");
    if (Q.rows() != T || Q.cols() != T) throw InputError("Q0", fmt::format("must be T×T = {}×{} (got {}×{})", T, T, Q.rows(), Q.cols()));
    if ((Q - Q.transpose()).cwiseAbs().maxCoeff() > 1e-12 * (1.0 + Q.cwiseAbs().maxCoeff()))
      throw InputError("Q0", "must be symmetric (Q = VᵀV)");
  }
  if (p.has("p_star")) {
    const Eigen::VectorXd ps = p.vector("p_star");
    if (ps.size() != d) throw InputError("p_star", fmt::format("must have length d = {} (got {})", d, ps.size()));
    if (std::fabs(ps.sum() - 1.0) > 1e-9) throw InputError("p_star", fmt::format("must sum to 1 (sums to {})", ps.sum()));
  }
  // t_points: the time rule of every dynamics model (hdat::Bound, hdat/core/harness.hpp).
  if (!p.has("t_points") && !(p.real("t_min") < p.real("t_max"))) {
    throw InputError("t_min", fmt::format("must be below t_max = {}", p.real("t_max")));
  }
}

Config Config::from(const Params& p) {
  Config c;
  c.T = static_cast<int>(p.integer("T"));
  c.d = static_cast<int>(p.integer("d"));
  c.n = p.has("n") ? static_cast<int>(p.integer("n")) : c.d;
  c.loss = parse_loss(p.text("loss"));
  c.normalization = parse_normalization(p.text("normalization"));
  c.architecture = p.text("architecture") == "tied" ? Architecture::tied : Architecture::value;
  c.init = parse_init(p.text("init"));
  const std::string flow = p.text("flow");
  c.flow = flow == "full" || (flow == "auto" && !c.reducible()) ? FlowKind::full : FlowKind::reduced;
  c.V0_std = p.real("V0_std");
  c.a0_mean = p.real("a0_mean");
  c.a0_std = p.real("a0_std");
  c.U0_scale = p.real("U0_scale");
  c.seed = static_cast<unsigned long>(p.integer("seed"));
  if (p.has("u0")) c.u0 = p.vector("u0");
  if (p.has("a0")) c.a0 = p.vector("a0");
  if (p.has("Q0")) c.Q0 = p.matrix("Q0");
  if (p.has("p_star")) c.p_star = p.vector("p_star");
  c.beta_norm = p.real("beta_norm");
  c.kappa = p.real("kappa");
  c.target_sharpness = p.real("target_sharpness");
  c.lr = p.real("lr");
  c.times = observation_times(p);
  c.t_max = c.times.back();
  const std::string st = p.text("stepper");
  c.stepper = st != "auto" ? st : "dopri5";
  c.rtol = p.real("rtol");
  c.atol = p.real("atol");
  c.log_time = p.boolean("log_time");
  c.replicator_sign = p.text("break_term") == "replicator_sign" ? -1.0 : 1.0;
  c.halvings = static_cast<int>(p.integer("halvings"));
  c.tolerance = p.real("tolerance");
  c.min_order = p.real("min_order");
  const Eigen::VectorXd dt = p.vector("drift_times");
  c.drift_times.assign(dt.data(), dt.data() + dt.size());
  c.figures = p.boolean("figures");
  c.claim = p.text("claim");
  return c;
}

}  // namespace hdat::polarization
