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

LinearCurve linear_theory(const Params& p, const std::vector<double>& alphas,
                          std::shared_ptr<const TargetLaw> target = nullptr) {
  LinearProblem pr;
  pr.target = target ? target : make_target_law(p);
  pr.noise = p.real("noise");
  pr.lambda = p.real("lambda");
  LinearOptions opt;
  opt.quadrature = quadrature_options(p);
  opt.broken_ddelta_factor = broken_terms(p).ddelta_J;
  const int T = static_cast<int>(p.integer("T"));
  const double f = linear_fields(T);
  std::vector<double> a_eff;
  for (double a : alphas) a_eff.push_back(a * f);
  LinearT1Solver solver(pr, opt);
  LinearCurve c;
  c.states = solver.curve(a_eff);
  for (std::size_t i = 0; i < alphas.size(); ++i) {
    FixedPointState& s = c.states[i];
    s.alpha = alphas[i];
    // Per sequence: T(T+1)/2 fields, each with the T = 1 loss.
    s.train_loss *= f;
    s.test_error *= f;
    s.test_error_clean *= f;
  }
  c.summary = solver.summary();
  c.Q0 = solver.Q0();
  return c;
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

SampleSideOptions sample_options(const Params& p, int threads) {
  SampleSideOptions o;
  o.samples = p.integer("mc_samples");
  o.sampling = sampling_from_name(p.text("sampling"));
  o.seed = static_cast<std::uint64_t>(p.integer("mc_seed"));
  o.threads = threads;
  o.broken_dq_factor = broken_terms(p).dq_M;
  o.hardmax_labels = channel_of(p) == "hardmax";
  return o;
}

bool closed_form_applies(const Params& p) { return channel_of(p) == "linear" && p.text("training") != "direct"; }

TheoryCurve theory_curve(const Params& p, const std::vector<double>& alphas, std::shared_ptr<const TargetLaw> target = nullptr,
                         int threads = 0, const Eigen::Vector3d* warm = nullptr, bool error_bars = true) {
  if (!target) target = make_target_law(p);
  TheoryCurve c;
  c.Q0 = target->second_moment();
  if (closed_form_applies(p)) {
    if (p.text("break_term") == "channel")
      throw InputError("break_term", "channel: the linear closed form has no sampled channel term (use T >= 2, or "
                                     "estimator=amp, whose state evolution has one)");
    LinearCurve l = linear_theory(p, alphas, target);
    c.states = std::move(l.states);
    c.summary = l.summary.to_json();
    c.method = "closed form (linear channel)";
    return c;
  }
  PriorSide prior;
  prior.target = target;
  prior.kind = p.text("training") == "direct" ? PriorKind::frobenius : PriorKind::trace_psd;
  prior.lambda = p.real("lambda");
  prior.quadrature = quadrature_options(p);
  prior.broken_ddelta_factor = broken_terms(p).ddelta_J;
  const int T = static_cast<int>(p.integer("T"));
  const Channel ch = channel_of(p) == "linear" ? Channel::linear : Channel::softmax;
  auto sample = std::make_shared<SampleSide>(T, ch, p.real("beta"), p.real("beta0"), c.Q0, p.real("noise"),
                                             sample_options(p, threads));
  GeneralSolverOptions fo;
  fo.fixed_point.damping = p.real("damping");
  fo.fixed_point.tolerance = p.real("fp_tol");
  fo.fixed_point.max_iterations = static_cast<int>(p.integer("fp_max_iter"));
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
  c.summary["sampling"] = p.text("sampling");
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

json thresholds_json(const Params& p, const std::shared_ptr<const TargetLaw>& target) {
  const int T = static_cast<int>(p.integer("T"));
  const double noise = p.real("noise");
  const double rank = target_rank_fraction(*target);
  json j;
  const auto ai = alpha_interp(target, noise, T);
  j["alpha_interp"] = ai.ok ? json(ai.alpha) : json(nullptr);
  j["alpha_interp_delta_bar"] = ai.ok ? json(ai.delta_bar) : json(nullptr);
  j["alpha_interp_noiseless_limit"] = alpha_interp_noiseless_limit(rank, T);
  const auto ap = alpha_perf(rank, T);
  j["alpha_perf"] = ap.alpha;
  j["alpha_perf_s_star"] = ap.s_star;
  j["alpha_PR"] = bayes_perfect_recovery(p, rank);  // null where the Bayes error never vanishes
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
ErmOptions erm_options(const Params& p, std::uint64_t seed) {
  ErmOptions o;
  o.tol = p.real("erm_tol");
  o.max_iter = p.integer("erm_max_iter");
  o.width = p.real("kappa");
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

SimRecord run_job(const Params& p, const SimJob& job, const std::string& training, bool paired_theory,
                  const Eigen::Vector3d* warm) {
  const double noise = p.real("noise"), lam = p.real("lambda");
  const long n = std::max(1L, std::lround(job.alpha * job.d * job.d));
  const auto replica = run_replica(job.d, job.ia);
  const auto seed = static_cast<std::uint64_t>(job.seed);
  const ErmOptions o = erm_options(p, seed);
  SimRecord s;
  Eigen::MatrixXd S0;
  if (p.integer("T") == 1) {
    const SensingData data = make_sensing_data(teacher_spec(p, job.d), n, noise, seed, replica);
    const ErmResult r = training == "convex" ? train_convex(data, lam, o)
                        : training == "direct" ? train_direct(data, lam, o)
                                               : train_factorized(data, lam, o);
    record_fit(r, r.test_error - noise, s);  // T = 1: the noise floor Δ of the test error is exact
    S0 = data.S0;
  } else {
    const AttentionSpec as = attention_spec(p, job.d, noise);
    auto eng = rng::engine(seed, replica, rng::teacher);
    S0 = sample_teacher(as.teacher, eng);
    const AttentionData train = make_attention_data(as, S0, n, seed, replica, rng::training_data);
    const AttentionData test = make_attention_data(as, S0, p.integer("test_samples"), seed, replica, rng::test_set);
    const AttentionResult r = train_attention(train, test, training, lam, o);
    record_fit(r, r.test_error_clean, s);
  }
  if (paired_theory) {
    const TheoryCurve c = theory_curve(p, {job.alpha}, empirical_target(S0), 1, warm, false);
    s.th_mse = c.states[0].mse;
    s.th_train_loss = c.states[0].train_loss;
    s.th_rank = c.states[0].rank;
    s.th_test_error = c.states[0].test_error;
    s.th_converged = c.states[0].converged;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Factorised (trace penalty) vs direct (Frobenius penalty) training at the best λ of a grid: the
// theory picks the λ of lowest theoretical test error; the simulation picks it by the error on a
// held-out validation set (n/4 fresh samples) and reports the test error there.

Table theory_lambda_compare(const Params& p, const std::vector<double>& alphas, const std::shared_ptr<const TargetLaw>& target,
                            int threads, Table& scan) {
  const auto grid = p.vector("lambda_grid");
  std::vector<std::array<double, 2>> best_err(alphas.size(), {1e300, 1e300}), best_lam(alphas.size()), best_mse(alphas.size());
  scan = Table({"alpha", "training", "lambda", "test_error", "mse", "converged"});
  for (int k = 0; k < 2; ++k)
    for (Eigen::Index il = 0; il < grid.size(); ++il) {
      const Params q = p.with({{"training", kTrainings[k]}, {"lambda", grid(il)}});
      const TheoryCurve c = theory_curve(q, alphas, target, threads, nullptr, false);
      for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
        const auto& st = c.states[ia];
        scan.add_row({alphas[ia], std::string(kTrainings[k]), grid(il), st.test_error, st.mse, st.converged ? 1.0 : 0.0});
        if (st.converged && st.test_error < best_err[ia][static_cast<std::size_t>(k)]) {
          best_err[ia][static_cast<std::size_t>(k)] = st.test_error;
          best_lam[ia][static_cast<std::size_t>(k)] = grid(il);
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

CvRecord run_cv_job(const Params& p, const SimJob& job) {
  const auto grid = p.vector("lambda_grid");
  const double noise = p.real("noise");
  const long n = std::max(1L, std::lround(job.alpha * job.d * job.d));
  const long nval = std::max(100L, n / 4);
  const auto replica = run_replica(job.d, job.ia);
  const auto seed = static_cast<std::uint64_t>(job.seed);
  const ErmOptions o = erm_options(p, seed);
  CvRecord rec;
  for (int k = 0; k < 2; ++k) {
    double best_val = 1e300;
    for (Eigen::Index il = 0; il < grid.size(); ++il) {
      const double lam = grid(il);
      double val = 0, test = 0, mse = 0;
      if (p.integer("T") == 1) {
        const SensingData data = make_sensing_data(teacher_spec(p, job.d), n, noise, seed, replica);
        const SensingData vd = make_sensing_data(data.S0, nval, noise, seed, replica, rng::user + 1);
        const ErmResult r = k == 0 ? train_factorized(data, lam, o) : train_direct(data, lam, o);
        val = (vd.y - sensing_apply(vd, r.S)).squaredNorm() / static_cast<double>(nval);
        test = r.test_error;
        mse = r.mse;
      } else {
        const AttentionSpec as = attention_spec(p, job.d, noise);
        auto eng = rng::engine(seed, replica, rng::teacher);
        const Eigen::MatrixXd S0 = sample_teacher(as.teacher, eng);
        const AttentionData train = make_attention_data(as, S0, n, seed, replica, rng::training_data);
        const AttentionData vd = make_attention_data(as, S0, nval, seed, replica, rng::user + 1);
        const AttentionData te = make_attention_data(as, S0, p.integer("test_samples"), seed, replica, rng::test_set);
        const AttentionResult r = train_attention(train, te, kTrainings[k], lam, o);
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

Table simulate_lambda_compare(const Params& p, const std::vector<double>& alphas, int d, const std::vector<long>& seeds,
                              const RunContext& ctx) {
  std::vector<SimJob> jobs;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (long s : seeds) jobs.push_back({alphas[ia], d, s, ia});
  std::vector<CvRecord> rec(jobs.size());
  Progress progress("cross-validated factorised vs direct", static_cast<long>(jobs.size()), !ctx.quiet);
  for_each_job(jobs.size(), [&](std::size_t k) { rec[k] = run_cv_job(p, jobs[k]); }, &progress);
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
      t.add_row({alphas[ia], double(d), std::string(kTrainings[k]), stats::mean_se(lam).mean, a.mean, a.se, b.mean, b.se,
                 double(te.size())});
    }
  return t;
}

std::vector<int> validate_dims(const Params& p) {
  std::vector<int> dims;
  if (p.has("dims"))
    for (long d : p.int_vector("dims")) dims.push_back(static_cast<int>(d));
  else
    dims = {40, 60, 80};
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

void require_simulable(const Params& p) {
  if (p.integer("T") >= 2 && channel_of(p) == "linear")
    throw InputError("channel", "the linear channel with T >= 2 is a theory-only check; simulate T = 1 or the softmax channel");
}

}  // namespace

// =============================================================================================

TeacherSpec teacher_spec(const Params& p, int d) {
  TeacherSpec t;
  t.d = d;
  t.kappa0 = p.real("kappa0");
  t.powerlaw = p.text("target") == "powerlaw";
  t.gamma = p.real("gamma");
  t.Q0 = target_Q0(p);
  return t;
}

AttentionSpec attention_spec(const Params& p, int d, double noise) {
  AttentionSpec as;
  as.teacher = teacher_spec(p, d);
  as.T = static_cast<int>(p.integer("T"));
  as.beta = p.real("beta");
  as.beta0 = p.real("beta0");
  as.noise = noise;
  as.seq2seq = p.text("task") == "seq2seq";
  as.hardmax = channel_of(p) == "hardmax";
  return as;
}

std::uint64_t run_replica(int d, std::size_t alpha_index) {
  return rng::stream_seed(static_cast<std::uint64_t>(d), alpha_index, rng::run_coordinates);
}

std::shared_ptr<const TargetLaw> target_law_at(const Params& p, int d) {
  if (p.text("target") == "wishart") return make_target_law(p);
  return std::make_shared<DiscreteTarget>(power_law_eigenvalues(d, p.real("kappa0"), p.real("gamma"), target_Q0(p)));
}

std::shared_ptr<const TargetLaw> empirical_target(const Eigen::MatrixXd& S0) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(S0, Eigen::EigenvaluesOnly);
  std::vector<double> ev(es.eigenvalues().data(), es.eigenvalues().data() + es.eigenvalues().size());
  const double top = std::max(1.0, std::fabs(ev.back()));
  for (double& x : ev)
    if (std::fabs(x) < 1e-12 * top) x = 0;
  return std::make_shared<const DiscreteTarget>(ev);
}

BrokenTerms broken_terms(const Params& p) {
  BrokenTerms b;
  const std::string t = p.text("break_term");
  b.ddelta_J = t == "denoiser" ? 1.25 : 1.0;
  b.dq_M = t == "channel" ? 1.5 : 1.0;
  b.shrinkage = t == "denoiser" ? 1.25 : 1.0;
  b.information = t == "channel" ? 1.25 : 1.0;
  return b;
}

// =============================================================================================
// The declaration through the contract (hdat/core/model.hpp): the theory along α, one ERM fit at
// (α, d, seed) with the theory at the fit's own target spectrum, and what is the model's own in
// each command's output.

namespace erm_declaration {
namespace {

class ErmTheory final : public FixedPointTheory {
 public:
  explicit ErmTheory(Params p) : p_(std::move(p)) {}
  FixedPointRun curve(const std::vector<double>& alphas, bool error_bars) const override {
    const TheoryCurve c = theory_curve(p_, alphas, nullptr, 0, nullptr, error_bars);
    FixedPointRun run;
    run.table = curve_table(c.states, nullptr, p_.real("kappa"), &c.errors);
    for (const FixedPointState& s : c.states)
      run.states.push_back(s.converged ? Eigen::VectorXd(Eigen::Vector3d(s.Sigma, s.m, s.q)) : Eigen::VectorXd());
    run.solver = c.summary;
    run.method = c.method;
    return run;
  }

 private:
  Params p_;
};

Fit erm_fit(const Params& p, const FitPoint& at) {
  const SimJob job{at.control, at.size, static_cast<long>(at.seed), at.control_index};
  Eigen::Vector3d warm;
  if (at.theory_state) warm = *at.theory_state;
  const SimRecord r = run_job(p, job, p.text("training"), at.paired, at.theory_state ? &warm : nullptr);
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

FixedPointSettings erm_settings(const Params& p) {
  FixedPointSettings s;
  s.controls = alpha_grid(p);
  s.simulate_size = static_cast<int>(p.integer("d"));
  s.validate_sizes = validate_dims(p);
  for (long seed : seed_list(p)) s.seeds.push_back(static_cast<std::uint64_t>(seed));
  s.criterion = {p.real("false_alarm"), p.real("detectable"), p.real("rel_floor")};
  if (p.integer("T") >= 2) s.compared.push_back("test_error");
  s.compared.push_back("mse");
  s.compared.push_back("train_loss");
  if (p.text("training") != "direct") s.compared.push_back("rank");  // the Frobenius estimator is full rank
  return s;
}

// A row of curve.csv back as the state the spectral analyses need.
FixedPointState state_of_row(const Table& curve, std::size_t i) {
  FixedPointState s;
  s.alpha = curve.number(i, "alpha");
  s.delta = curve.number(i, "delta");
  s.t = curve.number(i, "t");
  s.eta = curve.number(i, "eta");
  s.m = curve.number(i, "m");
  s.mse = curve.number(i, "mse");
  s.rank = curve.number(i, "rank");
  s.test_error = curve.number(i, "test_error");
  s.converged = curve.number(i, "converged") != 0;
  return s;
}

// Power-law (finite-d) target: emergence of outliers, the error decomposition and the scaling law.
void add_scaling_law(const Params& p, const std::shared_ptr<const TargetLaw>& target, const Table& curve, RunOutput& out) {
  const int d = static_cast<int>(p.integer("d"));
  const int T = static_cast<int>(p.integer("T"));
  Table dt({"alpha", "n_over_d", "mse", "test_error", "excess_error", "outliers", "K_delta", "E_over", "E_under",
            "E_approx", "E_sum", "bulk_overlap"});
  std::vector<double> lx, ly, lys;
  const double floor_err = T == 1 ? p.real("noise") : 0.0;  // T = 1: test error = 2 MSE + Δ
  for (std::size_t i = 0; i < curve.rows(); ++i) {
    const FixedPointState s = state_of_row(curve, i);
    if (!s.converged) continue;
    const auto law = make_law(target, s.delta);
    const ErrorDecomposition e = decompose_error(*law, s.t, s.eta, s.m);
    const double nd = s.alpha * d;
    const double excess = T == 1 ? s.test_error - floor_err : s.mse;
    dt.add_row({s.alpha, nd, s.mse, s.test_error, excess, double(e.outliers), double(e.K_delta), e.E_over, e.E_under,
                e.E_approx, e.E_sum, e.bulk_overlap});
    if (nd >= 10 && nd <= d / 10.0 && excess > 0 && e.E_under + e.E_approx > 0) {
      lx.push_back(std::log(nd));
      ly.push_back(std::log(excess));
      lys.push_back(std::log(e.E_under + e.E_approx));
    }
  }
  out.tables["decomposition.csv"] = dt;
  json sc = {{"f_gamma", 1 - 1 / (2 * p.real("gamma"))},
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
void add_learned_spectrum(const Params& p, const std::shared_ptr<const TargetLaw>& target, RunOutput& out) {
  const double a = p.real("spectrum");
  const TheoryCurve cs = theory_curve(p, {a}, target, 0, nullptr, false);
  const FixedPointState& s = cs.states.front();
  if (!s.converged) throw NumericalError("spectrum: the fixed point at alpha = " + std::to_string(a) + " did not converge");
  const auto law = make_law(target, s.delta);
  const LearnedSpectrum ls = learned_spectrum(*law, s.t, s.eta, p.real("kappa"));
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

void finish_curve(const Params& p, const FixedPointResults& r, RunOutput& out) {
  const auto& alphas = r.settings->controls;
  const auto target = make_target_law(p);
  const double kappa = p.real("kappa");
  const auto t1 = std::chrono::steady_clock::now();
  const BayesColumn bayes = p.boolean("bayes") ? bayes_column(p, target, alphas) : BayesColumn{};
  if (!bayes.mse.empty()) out.tables["curve.csv"].add_column("bayes_mse", bayes.mse);
  out.info["thresholds"] = thresholds_json(p, target);
  out.info["lambda_weight_decay"] = p.real("lambda") / std::sqrt(kappa);
  out.info["Q0"] = target->second_moment();
  out.info["channel"] = channel_of(p);
  const json& solver = r.theory->solver;
  if (solver.contains("J_evaluations"))
    out.info["solver"]["microseconds_per_J"] =
        1e6 * solver["wall_seconds"].get<double>() / std::max(1L, solver["J_evaluations"].get<long>());
  out.info["bayes_optimal"] = bayes.info;
  out.info["bayes_optimal"]["seconds"] = seconds_since(t1);
  if (!bayes.se.empty()) out.info["bayes_optimal"]["mse_se"] = bayes.se;
  if (target->discrete() && p.text("training") != "direct") add_scaling_law(p, target, r.theory->table, out);
  if (p.has("lambda_grid")) {
    Table scan;
    out.tables["compare.csv"] = theory_lambda_compare(p, alphas, target, 0, scan);
    out.tables["lambda_scan.csv"] = scan;
    if (!bayes.mse.empty()) out.tables["bayes_gap.csv"] = bayes_gap_table(scan, alphas, bayes);
    out.info["compare"] = "compare.csv: the lambda of lambda_grid with the lowest theoretical test error, for the trace "
                          "penalty (factorised W, weight decay) and the Frobenius penalty (direct S)";
  }
  if (p.has("spectrum")) add_learned_spectrum(p, target, out);
}

// The eigenvalue histogram of the learned S (largest d, pooled seeds) against the predicted law, at
// the α of `spectrum` or the middle of the grid.
void add_histogram(const Params& p, const FixedPointResults& r, RunOutput& out) {
  const auto& alphas = r.settings->controls;
  const int d_max = r.settings->validate_sizes.back();
  const std::size_t ih = p.has("spectrum") ? std::min_element(alphas.begin(), alphas.end(), [&](double a, double b) {
                                               return std::fabs(a - p.real("spectrum")) < std::fabs(b - p.real("spectrum"));
                                             }) - alphas.begin()
                                           : alphas.size() / 2;
  const FixedPointState s = state_of_row(r.theory->table, ih);
  if (p.text("training") == "direct" || !s.converged) return;
  const auto law = make_law(make_target_law(p), s.delta);
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
void add_same_data_check(const Params& p, const FixedPointResults& r, RunOutput& out) {
  const auto& alphas = r.settings->controls;
  const int d_min = r.settings->validate_sizes.front();
  double maxdiff = 0;
  std::vector<double> diffs;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
    const SimJob job{alphas[ia], d_min, static_cast<long>(r.settings->seeds.front()), ia};
    const SimRecord a = run_job(p, job, "factorized", false, nullptr), b = run_job(p, job, "convex", false, nullptr);
    maxdiff = std::max(maxdiff, std::fabs(a.mse - b.mse));
    diffs.push_back(a.mse - b.mse);
  }
  out.info["same_data"] = {{"compared", "factorized vs convex"}, {"d", d_min}, {"mse_differences", diffs},
                           {"max_abs_difference", maxdiff}};
}

void finish_validate(const Params& p, const FixedPointResults& r, RunOutput& out) {
  // A dense theory curve for the figures (the checks use the α grid and its error bars).
  const auto& alphas = r.settings->controls;
  const double lo = 0.8 * *std::min_element(alphas.begin(), alphas.end());
  const double hi = 1.1 * *std::max_element(alphas.begin(), alphas.end());
  const int nd = closed_form_applies(p) ? 60 : 20;
  std::vector<double> dense;
  for (int i = 0; i < nd; ++i) dense.push_back(lo + (hi - lo) * i / (nd - 1.0));
  out.tables["curve.csv"] = curve_table(theory_curve(p, dense, nullptr, 0, nullptr, false).states, nullptr, p.real("kappa"));
  add_histogram(p, r, out);
  if (p.text("training") == "factorized") add_same_data_check(p, r, out);
  out.info["training"] = p.text("training");
}

FixedPointModel make_erm_model() {
  FixedPointModel m;
  m.control = "alpha";
  m.theory = [](const Params& p) { return std::make_unique<ErmTheory>(p); };
  m.fit = erm_fit;
  m.settings = erm_settings;
  m.point_columns = [](const Params& p, double alpha, int d) {
    return std::vector<std::pair<std::string, Cell>>{{"n", double(std::max(1L, std::lround(alpha * d * d)))},
                                                     {"training", p.text("training")}};
  };
  // Rank is quantised in steps of 1/d.
  m.resolution = [](const std::string& observable, int d) { return observable == "rank" ? 1.0 / d : 0.0; };
  m.paired_prefix = "theory_same_spectrum";
  m.comparison = "the mean paired difference (simulation - theory at the seed's own target spectrum); every theory "
                 "point converged";
  m.describe = [](const Params& p) {
    return fmt::format("tied-attention, T = {}, {} channel, {} training", p.integer("T"), channel_of(p), p.text("training"));
  };
  m.finish = [](const Params& p, const FixedPointResults& r, RunOutput& out) {
    if (r.curve()) finish_curve(p, r, out);
    if (r.validation()) finish_validate(p, r, out);
    out.info["lambda_weight_decay"] = p.real("lambda") / std::sqrt(p.real("kappa"));
    if (r.simulation()) out.info["training"] = p.text("training");
  };
  return m;
}

// simulate with lambda_grid: factorised and direct training, each at its cross-validated λ.
RunOutput lambda_compare_simulate(const Params& p, RunContext& ctx) {
  RunOutput out;
  const auto alphas = alpha_grid(p);
  const auto seeds = seed_list(p);
  const int d = static_cast<int>(p.integer("d"));
  out.tables["compare_sim.csv"] = simulate_lambda_compare(p, alphas, d, seeds, ctx);
  out.info["compare"] = "compare_sim.csv: factorised and direct training, each at the lambda of lambda_grid with the "
                        "lowest error on a held-out validation set (n/4 fresh samples); test error at that lambda";
  out.info["seeds"] = seeds;
  out.info["training"] = p.text("training");
  out.info["lambda_weight_decay"] = p.real("lambda") / std::sqrt(p.real("kappa"));
  out.summary = fmt::format("tied-attention simulate: T = {}, d = {}, {} alpha values x {} seeds, factorised vs direct",
                            p.integer("T"), d, alphas.size(), seeds.size());
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
  if (p.text("estimator") == "amp") return amp_simulate_command(p, ctx);
  require_simulable(p);
  if (p.has("lambda_grid")) return erm_declaration::lambda_compare_simulate(p, ctx);
  return fixed_point_simulate(erm_model(), p, ctx);
}

RunOutput validate_command(const Params& p, RunContext& ctx) {
  use_threads(ctx.threads);
  if (p.text("estimator") == "amp") return amp_validate_command(p, ctx);
  require_simulable(p);
  return fixed_point_validate(erm_model(), p, ctx);
}

}  // namespace hdat::tied_attention
