#include "hdat/tied_attention/model.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "hdat/core/error.hpp"
#include "hdat/core/verdict.hpp"

namespace hdat::tied_attention {

namespace {
// The output channel as the keys say it (auto: T = 1 linear, else softmax): the keys' conditions
// read it before a Config exists.
std::string channel_of(const Params& p) {
  const std::string c = p.text("channel");
  if (c != "auto") return c;
  return p.integer("T") == 1 ? "linear" : "softmax";
}

// Where the keys of the sampled channel and of the iterative solver apply.
constexpr const char* kSampledChannel = "the channel is sampled: softmax or hardmax (the default for T >= 2)";
bool sampled_channel(const Params& q) { return channel_of(q) != "linear"; }
constexpr const char* kIteratedTheory = "the theory is solved by iteration: a sampled channel (T >= 2 by default), or training=direct";
bool iterated_theory(const Params& q) { return sampled_channel(q) || q.text("training") == "direct"; }
}  // namespace

const ParamSet& param_set() {
  static const ParamSet set = [] {
    ParamSet p;
    p.integer("T", 2, "tokens per sequence (T = 1: quadratic network / matrix sensing, linear channel)", Range::between(1, 8))
        .real("kappa0", 0.5, "target rank ratio p0/d", Range::positive())
        .real("kappa", 1.0, "student width ratio p/d (factorised training)", Range::positive())
        .real("noise", 0.1, "label noise Delta (variance Delta on the diagonal of h, Delta/2 off it)", Range::nonnegative())
        .real("lambda", 1.0, "lambda-tilde: trace penalty d*lambda*Tr S (= weight decay lambda/sqrt(kappa) on W); "
                             "training=direct: Frobenius penalty d*lambda*Tr S^2", Range::positive())
        .real("beta", 1.0, "student softmax inverse temperature", Range::positive())
        .when(kSampledChannel, sampled_channel, {"channel", "T"})
        .real("beta0", 1.0, "target softmax inverse temperature", Range::positive())
        .when("the channel is softmax (labels sigma_beta0; the default for T >= 2)", [](const Params& q) { return channel_of(q) == "softmax"; }, {"channel", "T"})
        .choice("target", "wishart", {"wishart", "powerlaw"}, "target spectrum: W0 W0^T/sqrt(p0 d), or s_i ~ i^-gamma (finite d)")
        .real("gamma", 1.0, "power-law exponent of the target eigenvalues (> 1/2)", Range{0.5, std::nullopt, true, false})
        .when_in("target", {"powerlaw"})
        .real("Q0", nullptr, "Tr S0^2/d of the target (unset: 1 + kappa0)", Range::positive())
        .choice("task", "seq2lab", {"seq2lab", "seq2seq"}, "labels sigma(h) (T x T) or sigma(h) X (T x d, loss divided by d)")
        .any("alphas", "0.02:0.6:30", "sample ratios n/d^2: a list, \"start:stop:count\" or \"log:start:stop:count\"")
        .integer("d", 100, "dimension of the simulation (and of the finite-d power-law spectrum)", Range::between(2, 4096))
        .any("seeds", 4, "simulation seeds: a count n (seeds 1..n) or a list")
        .choice("training", "factorized", {"factorized", "convex", "direct"},
                "simulated training: W by L-BFGS with weight decay | S >= 0 with trace penalty (proximal gradient) | "
                "symmetric S with Frobenius penalty")
        .choice("channel", "auto", {"auto", "linear", "softmax", "hardmax"},
                "output channel: auto (T = 1 linear, else softmax) | softmax (labels sigma_beta0) | hardmax (labels one-hot "
                "at each row's argmax, beta0 -> infinity; ERM, AMP, Bayes) | linear (every field a linear measurement; theory only)")
        .choice("estimator", "erm", {"erm", "amp"},
                "simulate/validate: finite-d ERM (the `training` key) | Bayes-optimal AMP (GAMP with the RIE denoiser) "
                "against its state evolution")
        .choice("amp_prior", "law", {"law", "oracle"},
                "AMP's RIE denoiser: law (the target family's spectral law: sqrt(kappa0) MP, or the finite-d power law) | "
                "oracle (the sampled target's own spectrum; the state evolution is then paired per seed)")
        .when_in("estimator", {"amp"})
        .integer("amp_max_iter", 60, "AMP iterations at most (also the length of the compared trajectories)", Range::between(1, 10000))
        .when_in("estimator", {"amp"})
        .real("amp_tol", 1e-5, "AMP stops when |S_t+1 - S_t|_F <= amp_tol |S_t+1|_F", Range::open_between(0, 1))
        .when_in("estimator", {"amp"})
        .real("amp_damping", 1.0, "AMP damping theta in (0, 1] (1: none; the per-iteration state evolution is exact only "
                                  "without damping)", Range{0.0, 1.0, true, false})
        .when_in("estimator", {"amp"})
        .integer("se_samples", 16384, "QMC points of the hardmax channel's Bayes update (state evolution)",
                 Range::between(1024, 1 << 24))
        .when("the channel is hardmax", [](const Params& q) { return channel_of(q) == "hardmax"; }, {"channel"})
        .choice("break_term", "none", {"none", "denoiser", "channel"},
                "test only: break one term of the theory (denoiser: the prior side, d_delta J x 1.25 for ERM and the RIE "
                "MMSE's shrinkage x 1.25 for the state evolution; channel: the sample side, d_q M x 1.5 for ERM (T >= 2) "
                "and the channel's Bayes update x 1.25); validate must then disagree")
        .boolean("bayes", true, "curve: add the Bayes-optimal matrix error (bayes_mse; slow for large finite-d spectra)")
        .real_list("lambda_grid", nullptr,
                   "curve/simulate: compare factorised (trace) and direct (Frobenius) training, each at the best "
                   "lambda of this grid (theory: lowest test error; simulation: held-out validation)", Range::positive())
        .real("spectrum", nullptr, "write spectrum.csv of the learned S at this alpha (curve)", Range::positive())
        .int_list("dims", nullptr, "dimensions for validate's finite-size trend (unset: T = 1 [40, 60, 80], T >= 2 [40, 60, 80])",
                  Range::between(4, 4096))
        .real("quad_tol", 1e-11, "relative tolerance of the spectral quadratures", Range::open_between(0, 1e-2))
        .integer("mc_samples", 32768, "Gaussian samples of the softmax-channel expectations (T >= 2)", Range::between(256, 1 << 24))
        .when(kSampledChannel, sampled_channel, {"channel", "T"})
        .choice("sampling", "sobol", {"sobol", "mc"}, "samples of the softmax channel: randomised Sobol (QMC) or Monte Carlo")
        .when(kSampledChannel, sampled_channel, {"channel", "T"})
        .integer("mc_seed", 1, "seed of the theory's sample set (common random numbers)", Range::at_least(0))
        .when(kSampledChannel, sampled_channel, {"channel", "T"})
        .real("damping", 0.5, "damping of the fixed-point iteration (T >= 2)", Range::open_between(0, 1))
        .when(kIteratedTheory, iterated_theory, {"channel", "T", "training"})
        .real("fp_tol", 1e-7, "tolerance on the order parameters (T >= 2)", Range::open_between(0, 1e-2))
        .when(kIteratedTheory, iterated_theory, {"channel", "T", "training"})
        .integer("fp_max_iter", 400, "iterations of the fixed-point solver (T >= 2)", Range::between(1, 100000))
        .when(kIteratedTheory, iterated_theory, {"channel", "T", "training"})
        .real("erm_tol", 1e-9, "relative tolerance of the finite-d training", Range::open_between(0, 1e-2))
        .integer("erm_max_iter", 20000, "iterations of the finite-d training", Range::between(1, 10000000))
        .integer("test_samples", 20000, "fresh sequences for the simulated test error (T >= 2)", Range::between(100, 10000000))
        .when("T >= 2 (at T = 1 the test error is exact)", [](const Params& q) { return q.integer("T") >= 2; }, {"T"})
        .real("false_alarm", 0.01,
              "validate: the probability that a right theory is called DISAGREE, over all compared points together "
              "(Student-t critical values of the d -> infinity extrapolation, Bonferroni; docs/validation.md)",
              Range::open_between(0, 1))
        .real("detectable", 0.1,
              "validate: UNDECIDED (exit 5) unless a deviation of this fraction of the observable's largest |theory| would be "
              "caught at every compared point",
              Range::positive())
        .retire("z_crit", criterion_keys_instead())
        .real("rel_floor", 0.01, "validate: tolerance floor relative to the theory value (model error of the 1/d fit)",
              Range::nonnegative());
    return p;
  }();
  return set;
}

void check_params(Params& p) { p.attach(std::make_shared<const Config>(Config::from(p))); }

std::shared_ptr<const Config> config_for(const Params& p) {
  if (auto c = p.binding<Config>()) return c;
  return std::make_shared<const Config>(Config::from(p));
}

std::string training_name(Training t) {
  switch (t) {
    case Training::factorized:
      return "factorized";
    case Training::convex:
      return "convex";
    case Training::direct:
      return "direct";
  }
  return "?";
}

namespace {

Training training_from_name(const std::string& name) {
  for (Training t : {Training::factorized, Training::convex, Training::direct})
    if (training_name(t) == name) return t;
  throw InputError("training", "unknown training '" + name + "'");
}

BayesChannel channel_from_name(const std::string& name) {
  return name == "hardmax" ? BayesChannel::hardmax : name == "softmax" ? BayesChannel::softmax : BayesChannel::linear;
}

BrokenTerms broken_terms(const std::string& term) {
  BrokenTerms b;
  b.ddelta_J = term == "denoiser" ? 1.25 : 1.0;
  b.dq_M = term == "channel" ? 1.5 : 1.0;
  b.shrinkage = term == "denoiser" ? 1.25 : 1.0;
  b.information = term == "channel" ? 1.25 : 1.0;
  return b;
}

std::vector<int> distinct_dims(const Params& p) {
  std::vector<int> dims;
  if (!p.has("dims")) return dims;
  for (long d : p.int_vector("dims")) dims.push_back(static_cast<int>(d));
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

// The cross-key checks (the keys' own ranges and conditions are the ParamSet's).
void check(const Config& c) {
  if (c.target == Target::powerlaw && !(c.gamma > 0.5)) throw InputError("gamma", "must be > 1/2");
  if (c.T == 1 && !c.linear_channel())
    throw InputError("channel", c.channel_name() + " with T = 1 is constant; use T >= 2 or the linear channel");
  if (c.estimator == Estimator::amp) {
    if (c.channel == BayesChannel::hardmax && c.T != 2) throw InputError("channel", "AMP with the hardmax channel is implemented for T = 2");
    if (c.linear_channel() && c.T >= 2) throw InputError("channel", "AMP simulates T = 1 (linear) or the softmax / hardmax channels");
  }
}

}  // namespace

Config Config::from(const Params& p) {
  Config c;
  c.T = static_cast<int>(p.integer("T"));
  c.target = p.text("target") == "wishart" ? Target::wishart : Target::powerlaw;
  c.kappa0 = p.real("kappa0");
  c.gamma = p.real("gamma");
  c.Q0 = p.has("Q0") ? p.real("Q0") : 1 + c.kappa0;
  if (c.target == Target::wishart && p.has("Q0") && std::fabs(c.Q0 - (1 + c.kappa0)) > 1e-12)
    throw InputError("Q0", "the Wishart target has Q0 = 1 + kappa0; leave Q0 unset");
  c.channel = channel_from_name(channel_of(p));
  c.beta = p.real("beta");
  c.beta0 = p.real("beta0");
  c.noise = p.real("noise");
  c.seq2seq = p.text("task") == "seq2seq";
  c.training = training_from_name(p.text("training"));
  c.lambda = p.real("lambda");
  c.kappa = p.real("kappa");
  c.estimator = p.text("estimator") == "amp" ? Estimator::amp : Estimator::erm;
  c.oracle_prior = p.text("amp_prior") == "oracle";
  c.amp_max_iter = static_cast<int>(p.integer("amp_max_iter"));
  c.amp_tol = p.real("amp_tol");
  c.amp_damping = p.real("amp_damping");
  c.se_samples = p.integer("se_samples");
  check(c);
  c.alphas = alpha_grid(p);
  c.d = static_cast<int>(p.integer("d"));
  c.seeds = seed_list(p);
  c.dims = distinct_dims(p);
  if (p.has("lambda_grid")) {
    const Eigen::VectorXd g = p.vector("lambda_grid");
    c.lambda_grid.assign(g.data(), g.data() + g.size());
  }
  if (p.has("spectrum")) c.spectrum = p.real("spectrum");
  c.bayes = p.boolean("bayes");
  c.quad_tol = p.real("quad_tol");
  c.mc_samples = p.integer("mc_samples");
  c.sampling_name = p.text("sampling");
  c.sampling = sampling_from_name(c.sampling_name);
  c.mc_seed = static_cast<std::uint64_t>(p.integer("mc_seed"));
  c.damping = p.real("damping");
  c.fp_tol = p.real("fp_tol");
  c.fp_max_iter = static_cast<int>(p.integer("fp_max_iter"));
  c.erm_tol = p.real("erm_tol");
  c.erm_max_iter = p.integer("erm_max_iter");
  c.test_samples = p.integer("test_samples");
  c.criterion = {p.real("false_alarm"), p.real("detectable"), p.real("rel_floor")};
  c.break_term = p.text("break_term");
  c.broken = broken_terms(c.break_term);
  return c;
}

std::shared_ptr<const TargetLaw> Config::target_law_at(int size) const {
  if (target == Target::wishart) return std::make_shared<WishartTarget>(kappa0);
  return std::make_shared<DiscreteTarget>(power_law_eigenvalues(size, kappa0, gamma, Q0));
}

QuadratureOptions Config::quadrature() const {
  QuadratureOptions o;
  o.rel_tol = quad_tol;
  return o;
}

std::vector<double> alpha_grid(const Params& p, const std::string& key) {
  const json& v = p.raw(key);
  std::vector<double> out;
  auto bad = [&](const std::string& why) {
    throw InputError(key, why + " (allowed: a list of numbers > 0, \"start:stop:count\" or \"log:start:stop:count\")");
  };
  if (v.is_number()) {
    out.push_back(v.get<double>());
  } else if (v.is_array()) {
    for (const auto& x : v) {
      if (!x.is_number()) bad("entries must be numbers");
      out.push_back(x.get<double>());
    }
  } else if (v.is_string()) {
    std::string s = v.get<std::string>();
    bool logscale = false;
    if (s.rfind("log:", 0) == 0) {
      logscale = true;
      s = s.substr(4);
    }
    std::vector<std::string> parts;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ':')) parts.push_back(item);
    if (parts.size() != 3) bad("range must have three fields");
    double a = 0, b = 0;
    long n = 0;
    try {
      a = std::stod(parts[0]);
      b = std::stod(parts[1]);
      n = std::stol(parts[2]);
    } catch (...) {
      bad("unreadable range");
    }
    if (n < 1 || n > 100000) bad("count must be in [1, 100000]");
    if (logscale && !(a > 0 && b > 0)) bad("log range needs positive ends");
    for (long i = 0; i < n; ++i) {
      const double f = n == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(n - 1);
      out.push_back(logscale ? a * std::pow(b / a, f) : a + (b - a) * f);
    }
  } else {
    bad("unrecognised value");
  }
  if (out.empty()) bad("empty");
  for (double a : out)
    if (!(a > 0) || !std::isfinite(a)) bad("sample ratios must be finite and > 0");
  return out;
}

std::vector<long> seed_list(const Params& p) {
  const json& v = p.raw("seeds");
  std::vector<long> out;
  if (v.is_number_integer() && v.get<long>() >= 1 && v.get<long>() <= 100000) {
    for (long s = 1; s <= v.get<long>(); ++s) out.push_back(s);
  } else if (v.is_array() && !v.empty()) {
    for (const auto& x : v) {
      if (!x.is_number_integer() || x.get<long>() < 0) throw InputError("seeds", "list entries must be integers >= 0");
      out.push_back(x.get<long>());
    }
  } else {
    throw InputError("seeds", "expected a count in [1, 100000] or a non-empty list of integers");
  }
  return out;
}

}  // namespace hdat::tied_attention
