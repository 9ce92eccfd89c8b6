#include "hdat/tied_attention/declaration.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "hdat/core/error.hpp"
#include "hdat/core/finite_size_check.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/parallel_jobs.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/random.hpp"
#include "hdat/tied_attention/bayes_optimal.hpp"
#include "hdat/tied_attention/fixed_point.hpp"
#include "hdat/tied_attention/linear_t1.hpp"
#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/spectrum.hpp"
#include "hdat/tied_attention/thresholds.hpp"
#include "hdat/tied_attention/attention_erm.hpp"
#include "hdat/tied_attention/sensing.hpp"

namespace hdat::tied_attention {

namespace {

using json = nlohmann::json;

// Number of linear measurements per sequence when the linear channel is used with T tokens:
// T(T+1)/2 symmetric fields, each a T = 1 measurement (derivation.md §4.3).
double linear_fields(int T) { return T * (T + 1) / 2.0; }

// ---------------------------------------------------------------------------------------------
// Theory, linear channel (T = 1, or forced).

struct LinearCurve {
  std::vector<FixedPointState> states;
  LinearSummary summary;
  double Q0 = 0;
};

LinearCurve linear_theory(const Config& c, const std::vector<double>& alphas, std::shared_ptr<const TargetLaw> target) {
  LinearProblem pr;
  pr.target = std::move(target);
  pr.noise = c.noise;
  pr.lambda = c.lambda;
  LinearOptions opt;
  opt.quadrature = c.quadrature();
  opt.broken_ddelta_factor = c.broken.ddelta_J;
  const double f = linear_fields(c.T);
  std::vector<double> a_eff;
  for (double a : alphas) a_eff.push_back(a * f);
  LinearT1Solver solver(pr, opt);
  LinearCurve l;
  l.states = solver.curve(a_eff);
  for (std::size_t i = 0; i < alphas.size(); ++i) {
    FixedPointState& s = l.states[i];
    s.alpha = alphas[i];
    // Per sequence: T(T+1)/2 fields, each with the T = 1 loss.
    s.train_loss *= f;
    s.test_error *= f;
    s.test_error_clean *= f;
  }
  l.summary = solver.summary();
  l.Q0 = solver.Q0();
  return l;
}

// ---------------------------------------------------------------------------------------------
// Theory, any channel: the closed form where it applies (linear channel, trace penalty), else the
// general fixed point (softmax channel, or the Frobenius penalty of direct training).

struct TheoryCurve {
  std::vector<FixedPointState> states;
  std::vector<FixedPointErrors> errors;  ///< empty for the closed form (exact up to quadrature)
  json summary;
  double Q0 = 0;
  std::string method;
};

SampleSideOptions sample_options(const Config& c, int threads) {
  SampleSideOptions o;
  o.samples = c.mc_samples;
  o.sampling = c.sampling;
  o.seed = c.mc_seed;
  o.threads = threads;
  o.broken_dq_factor = c.broken.dq_M;
  o.hardmax_labels = c.channel == BayesChannel::hardmax;
  return o;
}

TheoryCurve theory_curve(const Config& cfg, const std::vector<double>& alphas, std::shared_ptr<const TargetLaw> target = nullptr,
                         int threads = 0, const Eigen::Vector3d* warm = nullptr, bool error_bars = true) {
  if (!target) target = cfg.target_law();
  TheoryCurve c;
  c.Q0 = target->second_moment();
  if (cfg.closed_form()) {
    if (cfg.break_term == "channel")
      throw InputError("break_term", "channel: the linear closed form has no sampled channel term (use T >= 2, or "
                                     "estimator=amp, whose state evolution has one)");
    LinearCurve l = linear_theory(cfg, alphas, target);
    c.states = std::move(l.states);
    c.summary = l.summary.to_json();
    c.method = "closed form (linear channel)";
    return c;
  }
  PriorSide prior;
  prior.target = target;
  prior.kind = cfg.training == Training::direct ? PriorKind::frobenius : PriorKind::trace_psd;
  prior.lambda = cfg.lambda;
  prior.quadrature = cfg.quadrature();
  prior.broken_ddelta_factor = cfg.broken.ddelta_J;
  const Channel ch = cfg.linear_channel() ? Channel::linear : Channel::softmax;
  auto sample = std::make_shared<SampleSide>(cfg.T, ch, cfg.beta, cfg.beta0, c.Q0, cfg.noise, sample_options(cfg, threads));
  GeneralSolverOptions fo;
  fo.fixed_point.damping = cfg.damping;
  fo.fixed_point.tolerance = cfg.fp_tol;
  fo.fixed_point.max_iterations = cfg.fp_max_iter;
  fo.error_bars = error_bars;
  GeneralSolver solver(prior, sample, c.Q0, fo);
  if (warm) {
    for (double a : alphas) c.states.push_back(solver.solve(a, *warm));
  } else {
    c.states = solver.curve(alphas);
  }
  c.errors = solver.errors();
  c.summary = solver.summary().to_json();
  c.summary["mc_samples"] = sample->samples();
  c.summary["sampling"] = cfg.sampling_name;
  c.summary["seconds_per_fixed_point"] = solver.summary().wall_seconds / std::max<double>(1, alphas.size());
  c.method = ch == Channel::softmax ? "softmax channel, sampled" : "linear channel, sampled";
  return c;
}

Table curve_table(const std::vector<FixedPointState>& st, const std::vector<double>* bayes_mse, double kappa,
                  const std::vector<FixedPointErrors>* errors = nullptr) {
  std::vector<std::string> cols = {"alpha", "test_error", "train_loss", "mse", "rank", "delta", "eps", "q", "m", "Sigma",
                                   "qhat", "mhat", "Sigmahat", "converged", "t", "eta", "trace", "regulariser",
                                   "objective", "test_error_clean", "branches", "residual", "width_ok"};
  if (bayes_mse) cols.push_back("bayes_mse");
  const bool with_se = errors && errors->size() == st.size();
  if (with_se)
    for (const char* c : {"test_error_se", "train_loss_se", "mse_se", "Sigma_se", "m_se", "q_se"}) cols.push_back(c);
  Table t(cols);
  for (std::size_t i = 0; i < st.size(); ++i) {
    const auto& s = st[i];
    std::vector<Cell> row = {s.alpha, s.test_error, s.train_loss, s.mse, s.rank, s.delta, s.eps, s.q, s.m, s.Sigma,
                             s.qhat, s.mhat, s.Sigmahat, s.converged ? 1.0 : 0.0, s.t, s.eta, s.trace, s.regulariser,
                             s.objective, s.test_error_clean, double(s.branches), s.residual,
                             (kappa >= s.rank) ? 1.0 : 0.0};
    if (bayes_mse) row.push_back((*bayes_mse)[i]);
    if (with_se) {
      const auto& e = (*errors)[i];
      for (double v : {e.test_error, e.train_loss, e.mse, e.Sigma, e.m, e.q}) row.push_back(v);
    }
    t.add_row(row);
  }
  return t;
}

json thresholds_json(const Config& c, const std::shared_ptr<const TargetLaw>& target) {
  const int T = c.T;
  const double noise = c.noise;
  const double rank = target_rank_fraction(*target);
  json j;
  const auto ai = alpha_interp(target, noise, T);
  j["alpha_interp"] = ai.ok ? json(ai.alpha) : json(nullptr);
  j["alpha_interp_delta_bar"] = ai.ok ? json(ai.delta_bar) : json(nullptr);
  j["alpha_interp_noiseless_limit"] = alpha_interp_noiseless_limit(rank, T);
  const auto ap = alpha_perf(rank, T);
  j["alpha_perf"] = ap.alpha;
  j["alpha_perf_s_star"] = ap.s_star;
  j["alpha_PR"] = bayes_perfect_recovery(c, rank);  // null where the Bayes error never vanishes
  j["rank_fraction"] = rank;
  j["note"] = "alpha_perf: Delta = 0, lambda -> 0+; alpha_interp: lambda -> 0+ at the given noise; "
              "alpha_interp -> alpha_interp_noiseless_limit (not alpha_perf) as noise -> 0; alpha_PR: Bayes-optimal "
              "perfect recovery (noise = 0, linear or softmax channel; none with noise or for hardmax labels)";
  return j;
}

json spectrum_json(const LearnedSpectrum& ls) {
  json o = json::array();
  for (const auto& x : ls.outliers)
    o.push_back({{"position", x.position}, {"target_eigenvalue", x.target_eigenvalue}, {"spike_formula", x.spike_formula},
                 {"mass", x.mass}});
  return {{"atom_at_zero", ls.atom}, {"bulk_mass", ls.bulk_mass}, {"outliers", o}, {"eta", ls.eta}, {"t", ls.t},
          {"delta", ls.delta}};
}

// ---------------------------------------------------------------------------------------------
// Simulation, T = 1.

struct SimJob {
  double alpha = 0;
  int d = 0;
  long seed = 0;
  std::size_t ia = 0;
};

struct SimRecord {
  double mse = 0, train_loss = 0, test_error = 0, test_error_clean = 0, rank = 0, trace = 0, objective = 0, seconds = 0;
  // The theory at this seed's own target spectrum (deterministic equivalent): paired comparison.
  double th_mse = 0, th_train_loss = 0, th_rank = 0, th_test_error = 0;
  bool th_converged = false;
  long iterations = 0;
  bool converged = false;
  Eigen::VectorXd eigenvalues;
};

// The finite-d training's settings for one run (its initialisation drawn from the run's seed).
ErmOptions erm_options(const Config& c, std::uint64_t seed) {
  ErmOptions o;
  o.tol = c.erm_tol;
  o.max_iter = c.erm_max_iter;
  o.width = c.kappa;
  o.init_seed = seed;
  return o;
}

// What a run keeps of a finished training (matrix sensing's ErmResult or attention's AttentionResult).
template <class Result>
void record_fit(const Result& r, double test_error_clean, SimRecord& s) {
  s.mse = r.mse;
  s.train_loss = r.train_loss;
  s.test_error = r.test_error;
  s.test_error_clean = test_error_clean;
  s.rank = r.rank;
  s.trace = r.trace;
  s.objective = r.objective;
  s.seconds = r.wall_seconds;
  s.iterations = r.iterations;
  s.converged = r.converged;
  s.eigenvalues = r.eigenvalues;
}

SimRecord run_job(const Config& c, const SimJob& job, Training training, bool paired_theory, const Eigen::Vector3d* warm) {
  const double noise = c.noise, lam = c.lambda;
  const long n = std::max(1L, std::lround(job.alpha * job.d * job.d));
  const auto replica = run_replica(job.d, job.ia);
  const auto seed = static_cast<std::uint64_t>(job.seed);
  const ErmOptions o = erm_options(c, seed);
  SimRecord s;
  Eigen::MatrixXd S0;
  if (c.T == 1) {
    const SensingData data = make_sensing_data(teacher_spec(c, job.d), n, noise, seed, replica);
    const ErmResult r = training == Training::convex   ? train_convex(data, lam, o)
                        : training == Training::direct ? train_direct(data, lam, o)
                                                       : train_factorized(data, lam, o);
    record_fit(r, r.test_error - noise, s);  // T = 1: the noise floor Δ of the test error is exact
    S0 = data.S0;
  } else {
    const AttentionSpec as = attention_spec(c, job.d, noise);
    auto eng = rng::engine(seed, replica, rng::teacher);
    S0 = sample_teacher(as.teacher, eng);
    const AttentionData train = make_attention_data(as, S0, n, seed, replica, rng::training_data);
    const AttentionData test = make_attention_data(as, S0, c.test_samples, seed, replica, rng::test_set);
    const AttentionResult r = train_attention(train, test, training_name(training), lam, o);
    record_fit(r, r.test_error_clean, s);
  }
  if (paired_theory) {
    const FixedPointState th = theory_curve(c, {job.alpha}, empirical_target(S0), 1, warm, false).states[0];
    s.th_mse = th.mse;
    s.th_train_loss = th.train_loss;
    s.th_rank = th.rank;
    s.th_test_error = th.test_error;
    s.th_converged = th.converged;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Factorised (trace penalty) vs direct (Frobenius penalty) training at the best λ of a grid: the
// theory picks the λ of lowest theoretical test error; the simulation picks it by the error on a
// held-out validation set (n/4 fresh samples) and reports the test error there.

Table theory_lambda_compare(const Config& c, const std::vector<double>& alphas, const std::shared_ptr<const TargetLaw>& target,
                            int threads, std::vector<LambdaScanPoint>& scan) {
  std::vector<std::array<double, 2>> best_err(alphas.size(), {1e300, 1e300}), best_lam(alphas.size()), best_mse(alphas.size());
  for (int k = 0; k < 2; ++k)
    for (double lambda : c.lambda_grid) {
      Config q = c;
      q.training = kTrainings[k];
      q.lambda = lambda;
      const TheoryCurve curve = theory_curve(q, alphas, target, threads, nullptr, false);
      for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
        const auto& st = curve.states[ia];
        scan.push_back({alphas[ia], kTrainings[k], lambda, st.test_error, st.mse, st.converged});
        if (st.converged && st.test_error < best_err[ia][static_cast<std::size_t>(k)]) {
          best_err[ia][static_cast<std::size_t>(k)] = st.test_error;
          best_lam[ia][static_cast<std::size_t>(k)] = lambda;
          best_mse[ia][static_cast<std::size_t>(k)] = st.mse;
        }
      }
    }
  Table t({"alpha", "lambda_factorized", "test_error_factorized", "mse_factorized", "lambda_direct", "test_error_direct",
           "mse_direct"});
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    t.add_row({alphas[ia], best_lam[ia][0], best_err[ia][0], best_mse[ia][0], best_lam[ia][1], best_err[ia][1], best_mse[ia][1]});
  return t;
}

struct CvRecord {
  double lambda[2] = {0, 0}, test[2] = {0, 0}, mse[2] = {0, 0};
};

CvRecord run_cv_job(const Config& c, const SimJob& job) {
  const double noise = c.noise;
  const long n = std::max(1L, std::lround(job.alpha * job.d * job.d));
  const long nval = std::max(100L, n / 4);
  const auto replica = run_replica(job.d, job.ia);
  const auto seed = static_cast<std::uint64_t>(job.seed);
  const ErmOptions o = erm_options(c, seed);
  CvRecord rec;
  for (int k = 0; k < 2; ++k) {
    double best_val = 1e300;
    for (const double lam : c.lambda_grid) {
      double val = 0, test = 0, mse = 0;
      if (c.T == 1) {
        const SensingData data = make_sensing_data(teacher_spec(c, job.d), n, noise, seed, replica);
        const SensingData vd = make_sensing_data(data.S0, nval, noise, seed, replica, rng::user + 1);
        const ErmResult r = kTrainings[k] == Training::factorized ? train_factorized(data, lam, o) : train_direct(data, lam, o);
        val = (vd.y - sensing_apply(vd, r.S)).squaredNorm() / static_cast<double>(nval);
        test = r.test_error;
        mse = r.mse;
      } else {
        const AttentionSpec as = attention_spec(c, job.d, noise);
        auto eng = rng::engine(seed, replica, rng::teacher);
        const Eigen::MatrixXd S0 = sample_teacher(as.teacher, eng);
        const AttentionData train = make_attention_data(as, S0, n, seed, replica, rng::training_data);
        const AttentionData vd = make_attention_data(as, S0, nval, seed, replica, rng::user + 1);
        const AttentionData te = make_attention_data(as, S0, c.test_samples, seed, replica, rng::test_set);
        const AttentionResult r = train_attention(train, te, training_name(kTrainings[k]), lam, o);
        val = attention_loss(vd, r.S, nullptr) / static_cast<double>(nval);
        test = r.test_error;
        mse = r.mse;
      }
      if (val < best_val) {
        best_val = val;
        rec.lambda[k] = lam;
        rec.test[k] = test;
        rec.mse[k] = mse;
      }
    }
  }
  return rec;
}

Table simulate_lambda_compare(const Config& c, const std::vector<double>& alphas, int d, const std::vector<long>& seeds,
                              const RunContext& ctx) {
  std::vector<SimJob> jobs;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (long s : seeds) jobs.push_back({alphas[ia], d, s, ia});
  std::vector<CvRecord> rec(jobs.size());
  Progress progress("cross-validated factorised vs direct", static_cast<long>(jobs.size()), !ctx.quiet);
  for_each_job(jobs.size(), [&](std::size_t k) { rec[k] = run_cv_job(c, jobs[k]); }, &progress);
  Table t({"alpha", "d", "training", "lambda_cv_mean", "test_error", "test_error_se", "mse", "mse_se", "seeds"});
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (int k = 0; k < 2; ++k) {
      std::vector<double> lam, te, ms;
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        if (jobs[j].ia != ia) continue;
        lam.push_back(rec[j].lambda[k]);
        te.push_back(rec[j].test[k]);
        ms.push_back(rec[j].mse[k]);
      }
      const Stat a = stats::mean_se(te), b = stats::mean_se(ms);
      t.add_row({alphas[ia], double(d), training_name(kTrainings[k]), stats::mean_se(lam).mean, a.mean, a.se, b.mean, b.se,
                 double(te.size())});
    }
  return t;
}

std::vector<int> validate_dims(const Config& c) { return c.dims.empty() ? std::vector<int>{40, 60, 80} : c.dims; }

void require_simulable(const Config& c) {
  if (c.T >= 2 && c.linear_channel())
    throw InputError("channel", "the linear channel with T >= 2 is a theory-only check; simulate T = 1 or the softmax channel");
}

}  // namespace

// =============================================================================================

TeacherSpec teacher_spec(const Config& c, int d) {
  TeacherSpec t;
  t.d = d;
  t.kappa0 = c.kappa0;
  t.powerlaw = c.target == Target::powerlaw;
  t.gamma = c.gamma;
  t.Q0 = c.Q0;
  return t;
}

AttentionSpec attention_spec(const Config& c, int d, double noise) {
  AttentionSpec as;
  as.teacher = teacher_spec(c, d);
  as.T = c.T;
  as.beta = c.beta;
  as.beta0 = c.beta0;
  as.noise = noise;
  as.seq2seq = c.seq2seq;
  as.hardmax = c.channel == BayesChannel::hardmax;
  return as;
}

std::uint64_t run_replica(int d, std::size_t alpha_index) {
  return rng::stream_seed(static_cast<std::uint64_t>(d), alpha_index, rng::run_coordinates);
}

std::shared_ptr<const TargetLaw> empirical_target(const Eigen::MatrixXd& S0) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(S0, Eigen::EigenvaluesOnly);
  std::vector<double> ev(es.eigenvalues().data(), es.eigenvalues().data() + es.eigenvalues().size());
  const double top = std::max(1.0, std::fabs(ev.back()));
  for (double& x : ev)
    if (std::fabs(x) < 1e-12 * top) x = 0;
  return std::make_shared<const DiscreteTarget>(ev);
}

// =============================================================================================
// The declaration through the contract (hdat/core/model.hpp): the theory along α, one ERM fit at
// (α, d, seed) with the theory at the fit's own target spectrum, and what is the model's own in
// each command's output.

namespace erm_declaration {
namespace {

// The theory along α, typed: the fixed points (with their error bars where sampled) that the
// model's own analyses read, and curve.csv written from them.
class ErmRun final : public FixedPointRun {
 public:
  ErmRun(const std::vector<double>& alphas, TheoryCurve curve, double kappa) : curve_(std::move(curve)), kappa_(kappa) {
    controls = alphas;
    const bool with_se = curve_.errors.size() == curve_.states.size();
    for (std::size_t i = 0; i < curve_.states.size(); ++i) {
      const FixedPointState& s = curve_.states[i];
      FixedPointSolution point;
      point.converged = s.converged;
      if (with_se) {
        const FixedPointErrors& e = curve_.errors[i];
        point.observables.add("test_error", s.test_error, e.test_error).add("train_loss", s.train_loss, e.train_loss).add("mse", s.mse, e.mse);
      } else {
        point.observables.add("test_error", s.test_error).add("train_loss", s.train_loss).add("mse", s.mse);
      }
      point.observables.add("rank", s.rank);
      if (s.converged) point.state = Eigen::Vector3d(s.Sigma, s.m, s.q);
      points.push_back(std::move(point));
    }
    solver = curve_.summary;
    method = curve_.method;
  }
  const std::vector<FixedPointState>& states() const { return curve_.states; }
  Table table(const std::string& /*control_name*/) const override {
    return curve_table(curve_.states, nullptr, kappa_, &curve_.errors);
  }

 private:
  TheoryCurve curve_;
  double kappa_;
};

// Power-law (finite-d) target: emergence of outliers, the error decomposition and the scaling law.
void add_scaling_law(const Config& c, const std::shared_ptr<const TargetLaw>& target, const std::vector<FixedPointState>& curve,
                     RunOutput& out) {
  const int d = c.d;
  Table dt({"alpha", "n_over_d", "mse", "test_error", "excess_error", "outliers", "K_delta", "E_over", "E_under",
            "E_approx", "E_sum", "bulk_overlap"});
  std::vector<double> lx, ly, lys;
  const double floor_err = c.T == 1 ? c.noise : 0.0;  // T = 1: test error = 2 MSE + Δ
  for (const FixedPointState& s : curve) {
    if (!s.converged) continue;
    const auto law = make_law(target, s.delta);
    const ErrorDecomposition e = decompose_error(*law, s.t, s.eta, s.m);
    const double nd = s.alpha * d;
    const double excess = c.T == 1 ? s.test_error - floor_err : s.mse;
    dt.add_row({s.alpha, nd, s.mse, s.test_error, excess, double(e.outliers), double(e.K_delta), e.E_over, e.E_under,
                e.E_approx, e.E_sum, e.bulk_overlap});
    if (nd >= 10 && nd <= d / 10.0 && excess > 0 && e.E_under + e.E_approx > 0) {
      lx.push_back(std::log(nd));
      ly.push_back(std::log(excess));
      lys.push_back(std::log(e.E_under + e.E_approx));
    }
  }
  out.tables["decomposition.csv"] = dt;
  json sc = {{"f_gamma", 1 - 1 / (2 * c.gamma)},
             {"fit_range_n_over_d", {10, d / 10.0}},
             {"points", lx.size()},
             {"note", "excess error (T = 1: test error - noise = 2 MSE; T >= 2: MSE) ~ (n/d)^(-exponent) fitted over "
                      "10 <= n/d <= d/10 (d << n << d^2); compare with f(gamma) = 1 - 1/(2 gamma)"}};
  if (lx.size() >= 3) {
    const double n = static_cast<double>(lx.size());
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < lx.size(); ++i) {
      mx += lx[i] / n;
      my += ly[i] / n;
    }
    for (std::size_t i = 0; i < lx.size(); ++i) {
      sxx += (lx[i] - mx) * (lx[i] - mx);
      sxy += (lx[i] - mx) * (ly[i] - my);
    }
    sc["exponent"] = -sxy / sxx;
    sc["prefactor"] = std::exp(my - (sxy / sxx) * mx);
    double ms = 0, sxs = 0;
    for (double v : lys) ms += v / n;
    for (std::size_t i = 0; i < lx.size(); ++i) sxs += (lx[i] - mx) * (lys[i] - ms);
    sc["exponent_signal"] = -sxs / sxx;  // E_under + E_approx: the part the scaling argument is about
  } else {
    sc["exponent"] = nullptr;
  }
  out.info["scaling"] = sc;
}

// The spectrum of the learned S at α = `spectrum`.
void add_learned_spectrum(const Config& c, const std::shared_ptr<const TargetLaw>& target, RunOutput& out) {
  const double a = *c.spectrum;
  const TheoryCurve cs = theory_curve(c, {a}, target, 0, nullptr, false);
  const FixedPointState& s = cs.states.front();
  if (!s.converged) throw NumericalError("spectrum: the fixed point at alpha = " + std::to_string(a) + " did not converge");
  const auto law = make_law(target, s.delta);
  const LearnedSpectrum ls = learned_spectrum(*law, s.t, s.eta, c.kappa);
  Table sp({"x", "density"});
  for (std::size_t i = 0; i < ls.x.size(); ++i) sp.add_row({ls.x[i], ls.density[i]});
  out.tables["spectrum.csv"] = sp;
  Table sw({"sv", "density"});
  for (std::size_t i = 0; i < ls.sv.size(); ++i) sw.add_row({ls.sv[i], ls.sv_density[i]});
  out.tables["spectrum_w.csv"] = sw;
  out.info["spectrum"] = spectrum_json(ls);
  out.info["spectrum"]["alpha"] = a;
  out.info["spectrum"]["note"] = "spectrum.csv: eigenvalues of S (bulk, x > 0); spectrum_w.csv: singular values of W / sqrt(d)";
}

// The λ scan of lambda_grid (one row per α, training and λ).
Table lambda_scan_table(const std::vector<LambdaScanPoint>& scan) {
  Table t({"alpha", "training", "lambda", "test_error", "mse", "converged"});
  for (const LambdaScanPoint& s : scan)
    t.add_row({s.alpha, training_name(s.training), s.lambda, s.test_error, s.mse, s.converged ? 1.0 : 0.0});
  return t;
}

void finish_curve(const Config& c, const FixedPointResults& r, RunOutput& out) {
  const auto& alphas = r.settings->controls;
  const auto target = c.target_law();
  const auto t1 = std::chrono::steady_clock::now();
  const BayesColumn bayes = c.bayes ? bayes_column(c, target, alphas) : BayesColumn{};
  if (!bayes.mse.empty()) out.tables["curve.csv"].add_column("bayes_mse", bayes.mse);
  out.info["thresholds"] = thresholds_json(c, target);
  out.info["lambda_weight_decay"] = c.lambda_weight_decay();
  out.info["Q0"] = target->second_moment();
  out.info["channel"] = c.channel_name();
  const json& solver = r.theory->solver;
  if (solver.contains("J_evaluations"))
    out.info["solver"]["microseconds_per_J"] =
        1e6 * solver["wall_seconds"].get<double>() / std::max(1L, solver["J_evaluations"].get<long>());
  out.info["bayes_optimal"] = bayes.info;
  out.info["bayes_optimal"]["seconds"] = seconds_since(t1);
  if (!bayes.se.empty()) out.info["bayes_optimal"]["mse_se"] = bayes.se;
  if (target->discrete() && c.training != Training::direct) add_scaling_law(c, target, r.theory_as<ErmRun>().states(), out);
  if (!c.lambda_grid.empty()) {
    std::vector<LambdaScanPoint> scan;
    out.tables["compare.csv"] = theory_lambda_compare(c, alphas, target, 0, scan);
    out.tables["lambda_scan.csv"] = lambda_scan_table(scan);
    if (!bayes.mse.empty()) out.tables["bayes_gap.csv"] = bayes_gap_table(scan, alphas, bayes);
    out.info["compare"] = "compare.csv: the lambda of lambda_grid with the lowest theoretical test error, for the trace "
                          "penalty (factorised W, weight decay) and the Frobenius penalty (direct S)";
  }
  if (c.spectrum) add_learned_spectrum(c, target, out);
}

// The eigenvalue histogram of the learned S (largest d, pooled seeds) against the predicted law, at
// the α of `spectrum` or the middle of the grid.
void add_histogram(const Config& c, const FixedPointResults& r, RunOutput& out) {
  const auto& alphas = r.settings->controls;
  const int d_max = r.settings->validate_sizes.back();
  const std::size_t ih = c.spectrum ? std::min_element(alphas.begin(), alphas.end(), [&](double a, double b) {
                                        return std::fabs(a - *c.spectrum) < std::fabs(b - *c.spectrum);
                                      }) - alphas.begin()
                                    : alphas.size() / 2;
  const FixedPointState& s = r.theory_as<ErmRun>().states()[ih];
  if (c.training == Training::direct || !s.converged) return;
  const auto law = make_law(c.target_law(), s.delta);
  std::vector<double> ev;
  int zeros = 0, total = 0;
  for (const FitGroup& g : *r.fits) {
    if (g.control_index != ih || g.size != d_max) continue;
    for (const Fit& f : g.fits) {
      const std::vector<double> e = f.info["eigenvalues"].get<std::vector<double>>();
      double top = 0;
      for (double x : e) top = std::max(top, std::fabs(x));
      for (double x : e) {
        ++total;
        if (x > 1e-4 * std::max(1e-300, top))
          ev.push_back(x);
        else
          ++zeros;
      }
    }
  }
  const double top = ev.empty() ? 1.0 : *std::max_element(ev.begin(), ev.end());
  const int bins = 30;
  Table ht({"x", "sim_density", "theory_density"});
  for (int b = 0; b < bins; ++b) {
    const double lo = top * b / bins, hi = top * (b + 1) / bins;
    const auto cnt = std::count_if(ev.begin(), ev.end(), [&](double x) { return x > lo && x <= hi; });
    const double x = 0.5 * (lo + hi);
    ht.add_row({x, static_cast<double>(cnt) / (std::max(total, 1) * (hi - lo)), learned_density(*law, s.t, s.eta, x)});
  }
  out.tables["histogram.csv"] = ht;
  out.info["histogram"] = {{"alpha", alphas[ih]}, {"d", d_max}, {"atom_sim", total ? double(zeros) / total : 0.0},
                           {"atom_theory", 1 - s.rank}};
}

// Factorised vs convex training on the same data (smallest d): the same minimiser when the width is
// not binding.
void add_same_data_check(const Config& c, const FixedPointResults& r, RunOutput& out) {
  const auto& alphas = r.settings->controls;
  const int d_min = r.settings->validate_sizes.front();
  double maxdiff = 0;
  std::vector<double> diffs;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
    const SimJob job{alphas[ia], d_min, static_cast<long>(r.settings->seeds.front()), ia};
    const SimRecord a = run_job(c, job, Training::factorized, false, nullptr), b = run_job(c, job, Training::convex, false, nullptr);
    maxdiff = std::max(maxdiff, std::fabs(a.mse - b.mse));
    diffs.push_back(a.mse - b.mse);
  }
  out.info["same_data"] = {{"compared", "factorized vs convex"}, {"d", d_min}, {"mse_differences", diffs},
                           {"max_abs_difference", maxdiff}};
}

void finish_validate(const Config& c, const FixedPointResults& r, RunOutput& out) {
  // A dense theory curve for the figures (the checks use the α grid and its error bars).
  const auto& alphas = r.settings->controls;
  const double lo = 0.8 * *std::min_element(alphas.begin(), alphas.end());
  const double hi = 1.1 * *std::max_element(alphas.begin(), alphas.end());
  const int nd = c.closed_form() ? 60 : 20;
  std::vector<double> dense;
  for (int i = 0; i < nd; ++i) dense.push_back(lo + (hi - lo) * i / (nd - 1.0));
  out.tables["curve.csv"] = curve_table(theory_curve(c, dense, nullptr, 0, nullptr, false).states, nullptr, c.kappa);
  add_histogram(c, r, out);
  if (c.training == Training::factorized) add_same_data_check(c, r, out);
  out.info["training"] = training_name(c.training);
}

// ERM at one configuration: the theory along α, one fit at (α, d, seed) with the theory at the
// fit's own target spectrum, and what is the model's own in each command's output.
class Erm final : public FixedPoints {
 public:
  explicit Erm(std::shared_ptr<const Config> config) : c_(std::move(config)) {}

  FixedPointSettings settings() const override {
    FixedPointSettings s;
    s.controls = c_->alphas;
    s.simulate_size = c_->d;
    s.validate_sizes = validate_dims(*c_);
    for (long seed : c_->seeds) s.seeds.push_back(static_cast<std::uint64_t>(seed));
    s.criterion = c_->criterion;
    if (c_->T >= 2) s.compared.push_back("test_error");
    s.compared.push_back("mse");
    s.compared.push_back("train_loss");
    if (c_->training != Training::direct) s.compared.push_back("rank");  // the Frobenius estimator is full rank
    return s;
  }

  std::unique_ptr<const FixedPointRun> theory(const std::vector<double>& alphas, bool error_bars) const override {
    return std::make_unique<const ErmRun>(alphas, theory_curve(*c_, alphas, nullptr, 0, nullptr, error_bars), c_->kappa);
  }

  Fit fit(const FitPoint& at) const override {
    const SimJob job{at.control, at.size, static_cast<long>(at.seed), at.control_index};
    Eigen::Vector3d warm;
    if (at.theory_state) warm = *at.theory_state;
    const SimRecord r = run_job(*c_, job, c_->training, at.paired, at.theory_state ? &warm : nullptr);
    Fit f;
    f.observables.add("mse", r.mse)
        .add("train_loss", r.train_loss)
        .add("test_error", r.test_error)
        .add("test_error_clean", r.test_error_clean)
        .add("rank", r.rank)
        .add("trace", r.trace);
    if (at.paired) {
      f.paired.add("mse", r.th_mse).add("train_loss", r.th_train_loss).add("rank", r.th_rank).add("test_error", r.th_test_error);
      f.paired_converged = r.th_converged;
    }
    f.report.converged = r.converged;
    f.report.iterations = static_cast<int>(r.iterations);
    f.report.seconds = r.seconds;
    f.info["eigenvalues"] = std::vector<double>(r.eigenvalues.data(), r.eigenvalues.data() + r.eigenvalues.size());
    return f;
  }

  std::vector<std::pair<std::string, Cell>> point_columns(double alpha, int d) const override {
    return {{"n", double(std::max(1L, std::lround(alpha * d * d)))}, {"training", training_name(c_->training)}};
  }

  // Rank is quantised in steps of 1/d.
  double resolution(const std::string& observable, int d) const override { return observable == "rank" ? 1.0 / d : 0.0; }

  std::string describe() const override {
    return fmt::format("tied-attention, T = {}, {} channel, {} training", c_->T, c_->channel_name(), training_name(c_->training));
  }

  void finish(const FixedPointResults& r, RunOutput& out) const override {
    if (r.curve()) finish_curve(*c_, r, out);
    if (r.validation()) finish_validate(*c_, r, out);
    out.info["lambda_weight_decay"] = c_->lambda_weight_decay();
    if (r.simulation()) out.info["training"] = training_name(c_->training);
  }

 private:
  std::shared_ptr<const Config> c_;
};

FixedPointModel make_erm_model() {
  FixedPointModel m;
  m.control = "alpha";
  m.bind = [](const Params& p) -> std::unique_ptr<const FixedPoints> { return std::make_unique<const Erm>(config_for(p)); };
  m.paired_prefix = "theory_same_spectrum";
  m.comparison = "the mean paired difference (simulation - theory at the seed's own target spectrum); every theory "
                 "point converged";
  return m;
}

// simulate with lambda_grid: factorised and direct training, each at its cross-validated λ.
RunOutput lambda_compare_simulate(const Config& c, RunContext& ctx) {
  RunOutput out;
  out.tables["compare_sim.csv"] = simulate_lambda_compare(c, c.alphas, c.d, c.seeds, ctx);
  out.info["compare"] = "compare_sim.csv: factorised and direct training, each at the lambda of lambda_grid with the "
                        "lowest error on a held-out validation set (n/4 fresh samples); test error at that lambda";
  out.info["seeds"] = c.seeds;
  out.info["training"] = training_name(c.training);
  out.info["lambda_weight_decay"] = c.lambda_weight_decay();
  out.summary = fmt::format("tied-attention simulate: T = {}, d = {}, {} alpha values x {} seeds, factorised vs direct",
                            c.T, c.d, c.alphas.size(), c.seeds.size());
  return out;
}

}  // namespace
}  // namespace erm_declaration

const FixedPointModel& erm_model() {
  static const FixedPointModel model = erm_declaration::make_erm_model();
  return model;
}

RunOutput curve_command(const Params& p, RunContext& ctx) { return fixed_point_curve(erm_model(), p, ctx); }

RunOutput simulate_command(const Params& p, RunContext& ctx) {
  use_threads(ctx.threads);
  const auto c = config_for(p);
  if (c->estimator == Estimator::amp) return amp_simulate_command(*c, ctx);
  require_simulable(*c);
  if (!c->lambda_grid.empty()) return erm_declaration::lambda_compare_simulate(*c, ctx);
  return fixed_point_simulate(erm_model(), p, ctx);
}

RunOutput validate_command(const Params& p, RunContext& ctx) {
  use_threads(ctx.threads);
  const auto c = config_for(p);
  if (c->estimator == Estimator::amp) return amp_validate_command(*c, ctx);
  require_simulable(*c);
  return fixed_point_validate(erm_model(), p, ctx);
}

}  // namespace hdat::tied_attention
