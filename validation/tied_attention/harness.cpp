#include "hdat/tied_attention/harness.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "hdat/core/error.hpp"
#include "hdat/core/finite_size_check.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/random.hpp"
#include "hdat/tied_attention/amp_harness.hpp"
#include "hdat/tied_attention/fixed_point.hpp"
#include "hdat/tied_attention/linear_t1.hpp"
#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/spectrum.hpp"
#include "hdat/tied_attention/thresholds.hpp"
#include "hdat/tied_attention/attention_erm.hpp"
#include "hdat/tied_attention/sensing.hpp"

namespace hdat::tied {

namespace {

using json = nlohmann::json;


void set_threads(const RunContext& ctx) {
  if (ctx.threads > 0) omp_set_num_threads(ctx.threads);
}

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

SimRecord run_job(const Params& p, const SimJob& job, const std::string& training, bool paired_theory,
                  const Eigen::Vector3d* warm) {
  const double noise = p.real("noise"), lam = p.real("lambda");
  const long n = std::max(1L, std::lround(job.alpha * job.d * job.d));
  const auto replica = run_replica(job.d, job.ia);
  const auto seed = static_cast<std::uint64_t>(job.seed);
  ErmOptions o;
  o.tol = p.real("erm_tol");
  o.max_iter = p.integer("erm_max_iter");
  o.width = p.real("kappa");
  o.init_seed = seed;
  SimRecord s;
  Eigen::MatrixXd S0;
  if (p.integer("T") == 1) {
    const SensingData data = make_sensing_data(teacher_spec(p, job.d), n, noise, seed, replica);
    const ErmResult r = training == "convex" ? train_convex(data, lam, o)
                        : training == "direct" ? train_direct(data, lam, o)
                                               : train_factorized(data, lam, o);
    s.mse = r.mse;
    s.train_loss = r.train_loss;
    s.test_error = r.test_error;
    s.test_error_clean = r.test_error - noise;
    s.rank = r.rank;
    s.trace = r.trace;
    s.objective = r.objective;
    s.seconds = r.wall_seconds;
    s.iterations = r.iterations;
    s.converged = r.converged;
    s.eigenvalues = r.eigenvalues;
    S0 = data.S0;
  } else {
    const AttentionSpec as = attention_spec(p, job.d, noise);
    auto eng = rng::engine(seed, replica, rng::teacher);
    S0 = sample_teacher(as.teacher, eng);
    const AttentionData train = make_attention_data(as, S0, n, seed, replica, rng::training_data);
    const AttentionData test = make_attention_data(as, S0, p.integer("test_samples"), seed, replica, rng::test_set);
    const AttentionResult r = train_attention(train, test, training, lam, o);
    s.mse = r.mse;
    s.train_loss = r.train_loss;
    s.test_error = r.test_error;
    s.test_error_clean = r.test_error_clean;
    s.rank = r.rank;
    s.trace = r.trace;
    s.objective = r.objective;
    s.seconds = r.wall_seconds;
    s.iterations = r.iterations;
    s.converged = r.converged;
    s.eigenvalues = r.eigenvalues;
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

struct SimPoint {
  double alpha = 0;
  int d = 0;
  long n = 0;
  Stat mse, train_loss, test_error, test_error_clean, rank, trace;
  Stat th_mse, th_train_loss, th_rank, th_test_error;  // deterministic-equivalent theory per seed
  Stat d_mse, d_train_loss, d_rank, d_test_error;      // paired differences simulation − that theory
  double th_converged = 0;
  double iterations = 0, converged = 0, seconds = 0;
  std::vector<Eigen::VectorXd> eigenvalues;
};

std::vector<SimPoint> simulate(const Params& p, const std::vector<double>& alphas, const std::vector<int>& dims,
                               const std::vector<long>& seeds, const std::string& training, const RunContext& ctx,
                               bool paired_theory, const std::vector<FixedPointState>* warm_states = nullptr) {
  std::vector<SimJob> jobs;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (int d : dims)
      for (long s : seeds) jobs.push_back({alphas[ia], d, s, ia});
  // Largest jobs first: better load balance.
  std::stable_sort(jobs.begin(), jobs.end(), [](const SimJob& a, const SimJob& b) { return a.alpha * a.d * a.d * a.d > b.alpha * b.d * b.d * b.d; });
  std::vector<SimRecord> rec(jobs.size());
  Progress prog("simulate (" + training + ")", static_cast<long>(jobs.size()), !ctx.quiet);
#pragma omp parallel for schedule(dynamic, 1)
  for (long k = 0; k < static_cast<long>(jobs.size()); ++k) {
    if (interrupted()) continue;
    const SimJob& job = jobs[static_cast<std::size_t>(k)];
    Eigen::Vector3d w;
    const Eigen::Vector3d* warm = nullptr;
    if (warm_states && (*warm_states)[job.ia].converged) {
      const auto& st = (*warm_states)[job.ia];
      w = Eigen::Vector3d(st.Sigma, st.m, st.q);
      warm = &w;
    }
    rec[static_cast<std::size_t>(k)] = run_job(p, job, training, paired_theory, warm);
    prog.advance();
  }
  prog.finish();
  if (interrupted()) throw NumericalError("interrupted");
  std::vector<SimPoint> out;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (int d : dims) {
      SimPoint sp;
      sp.alpha = alphas[ia];
      sp.d = d;
      sp.n = std::max(1L, std::lround(alphas[ia] * d * d));
      std::vector<double> mse, tl, te, tc, rk, tr, tmse, ttl, trk, tte, dmse, dtl, drk, dte;
      for (std::size_t k = 0; k < jobs.size(); ++k) {
        if (jobs[k].ia != ia || jobs[k].d != d) continue;
        const SimRecord& r = rec[k];
        if (paired_theory) {
          tmse.push_back(r.th_mse);
          ttl.push_back(r.th_train_loss);
          trk.push_back(r.th_rank);
          tte.push_back(r.th_test_error);
          dmse.push_back(r.mse - r.th_mse);
          dtl.push_back(r.train_loss - r.th_train_loss);
          drk.push_back(r.rank - r.th_rank);
          dte.push_back(r.test_error - r.th_test_error);
          sp.th_converged += r.th_converged ? 1 : 0;
        }
        mse.push_back(r.mse);
        tl.push_back(r.train_loss);
        te.push_back(r.test_error);
        tc.push_back(r.test_error_clean);
        rk.push_back(r.rank);
        tr.push_back(r.trace);
        sp.iterations += static_cast<double>(r.iterations);
        sp.converged += r.converged ? 1 : 0;
        sp.seconds += r.seconds;
        sp.eigenvalues.push_back(r.eigenvalues);
      }
      const double ns = static_cast<double>(mse.size());
      sp.iterations /= ns;
      sp.converged /= ns;
      sp.seconds /= ns;
      sp.th_converged /= ns;
      sp.mse = stats::mean_se(mse);
      sp.train_loss = stats::mean_se(tl);
      sp.test_error = stats::mean_se(te);
      sp.test_error_clean = stats::mean_se(tc);
      sp.rank = stats::mean_se(rk);
      sp.trace = stats::mean_se(tr);
      sp.th_mse = stats::mean_se(tmse);
      sp.th_train_loss = stats::mean_se(ttl);
      sp.th_rank = stats::mean_se(trk);
      sp.th_test_error = stats::mean_se(tte);
      sp.d_mse = stats::mean_se(dmse);
      sp.d_train_loss = stats::mean_se(dtl);
      sp.d_rank = stats::mean_se(drk);
      sp.d_test_error = stats::mean_se(dte);
      out.push_back(std::move(sp));
    }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Factorised (trace penalty) vs direct (Frobenius penalty) training at the best λ of a grid: the
// theory picks the λ of lowest theoretical test error; the simulation picks it by the error on a
// held-out validation set (n/4 fresh samples) and reports the test error there.

const char* kTrainings[2] = {"factorized", "direct"};

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
  ErmOptions o;
  o.tol = p.real("erm_tol");
  o.max_iter = p.integer("erm_max_iter");
  o.width = p.real("kappa");
  o.init_seed = seed;
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
  Progress prog("cross-validated factorised vs direct", static_cast<long>(jobs.size()), !ctx.quiet);
#pragma omp parallel for schedule(dynamic, 1)
  for (long k = 0; k < static_cast<long>(jobs.size()); ++k) {
    if (interrupted()) continue;
    rec[static_cast<std::size_t>(k)] = run_cv_job(p, jobs[static_cast<std::size_t>(k)]);
    prog.advance();
  }
  prog.finish();
  if (interrupted()) throw NumericalError("interrupted");
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

Table sim_table(const std::vector<SimPoint>& pts, const std::string& training, bool paired = false) {
  std::vector<std::string> cols = {"alpha", "d", "n", "training", "mse", "mse_se", "train_loss", "train_loss_se",
                                   "test_error", "test_error_se", "test_error_clean", "test_error_clean_se", "rank",
                                   "rank_se", "trace", "trace_se", "seeds", "iterations", "converged_fraction",
                                   "seconds_per_run"};
  if (paired)
    for (const char* c : {"theory_same_spectrum_mse", "paired_mse_diff", "paired_mse_diff_se",
                          "theory_same_spectrum_train_loss", "paired_train_loss_diff", "paired_train_loss_diff_se",
                          "theory_same_spectrum_rank", "paired_rank_diff", "paired_rank_diff_se",
                          "theory_same_spectrum_test_error", "paired_test_error_diff", "paired_test_error_diff_se"})
      cols.push_back(c);
  Table t(cols);
  for (const auto& s : pts) {
    std::vector<Cell> row = {s.alpha, double(s.d), double(s.n), training, s.mse.mean, s.mse.se, s.train_loss.mean,
                             s.train_loss.se, s.test_error.mean, s.test_error.se, s.test_error_clean.mean,
                             s.test_error_clean.se, s.rank.mean, s.rank.se, s.trace.mean, s.trace.se, double(s.mse.n),
                             s.iterations, s.converged, s.seconds};
    if (paired)
      for (double v : {s.th_mse.mean, s.d_mse.mean, s.d_mse.se, s.th_train_loss.mean, s.d_train_loss.mean,
                       s.d_train_loss.se, s.th_rank.mean, s.d_rank.mean, s.d_rank.se, s.th_test_error.mean,
                       s.d_test_error.mean, s.d_test_error.se})
        row.push_back(v);
    t.add_row(row);
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

RunOutput curve_command(const Params& p, RunContext& ctx) {
  set_threads(ctx);
  RunOutput out;
  const auto t0 = std::chrono::steady_clock::now();
  const auto alphas = alpha_grid(p);
  const auto target = make_target_law(p);
  const int T = static_cast<int>(p.integer("T"));
  const double kappa = p.real("kappa");
  const TheoryCurve c = theory_curve(p, alphas, target, ctx.threads);
  const double theory_seconds = seconds_since(t0);
  // Bayes-optimal reference (matrix MSE).
  const auto t1 = std::chrono::steady_clock::now();
  const BayesColumn bayes = p.boolean("bayes") ? bayes_column(p, target, alphas) : BayesColumn{};
  out.tables["curve.csv"] = curve_table(c.states, bayes.mse.empty() ? nullptr : &bayes.mse, kappa, &c.errors);
  out.info["thresholds"] = thresholds_json(p, target);
  out.info["lambda_weight_decay"] = p.real("lambda") / std::sqrt(kappa);
  out.info["Q0"] = c.Q0;
  out.info["channel"] = channel_of(p);
  out.info["theory_method"] = c.method;
  out.info["solver"] = c.summary;
  out.info["solver"]["seconds_per_fixed_point"] = theory_seconds / static_cast<double>(alphas.size());
  if (c.summary.contains("J_evaluations"))
    out.info["solver"]["microseconds_per_J"] =
        1e6 * c.summary["wall_seconds"].get<double>() / std::max(1L, c.summary["J_evaluations"].get<long>());
  out.info["bayes_optimal"] = bayes.info;
  out.info["bayes_optimal"]["seconds"] = seconds_since(t1);
  if (!bayes.se.empty()) out.info["bayes_optimal"]["mse_se"] = bayes.se;
  int bad = 0;
  for (const auto& s : c.states) bad += s.converged ? 0 : 1;
  // Power-law (finite-d) target: emergence of outliers, error decomposition and the scaling law.
  if (target->discrete() && p.text("training") != "direct") {
    const int d = static_cast<int>(p.integer("d"));
    Table dt({"alpha", "n_over_d", "mse", "test_error", "excess_error", "outliers", "K_delta", "E_over", "E_under",
              "E_approx", "E_sum", "bulk_overlap"});
    std::vector<double> lx, ly, lys;
    const double floor_err = T == 1 ? p.real("noise") : 0.0;  // T = 1: test error = 2 MSE + Δ
    for (const auto& s : c.states) {
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
  if (p.has("lambda_grid")) {
    Table scan;
    out.tables["compare.csv"] = theory_lambda_compare(p, alphas, target, ctx.threads, scan);
    out.tables["lambda_scan.csv"] = scan;
    if (!bayes.mse.empty()) out.tables["bayes_gap.csv"] = bayes_gap_table(scan, alphas, bayes);
    out.info["compare"] = "compare.csv: the lambda of lambda_grid with the lowest theoretical test error, for the trace "
                          "penalty (factorised W, weight decay) and the Frobenius penalty (direct S)";
  }
  // Spectrum of the learned S at alpha = spectrum.
  if (p.has("spectrum")) {
    const double a = p.real("spectrum");
    const TheoryCurve cs = theory_curve(p, {a}, target, ctx.threads, nullptr, false);
    const FixedPointState& s = cs.states.front();
    if (!s.converged) throw NumericalError("spectrum: the fixed point at alpha = " + std::to_string(a) + " did not converge");
    const auto law = make_law(target, s.delta);
    const LearnedSpectrum ls = learned_spectrum(*law, s.t, s.eta, kappa);
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
  out.summary = fmt::format("tied-attention curve: {} alpha values, T = {} ({}), {:.3f} s, {} not converged", alphas.size(),
                            T, c.method, theory_seconds, bad);
  if (bad) out.exit_code = 3;
  return out;
}

RunOutput simulate_command(const Params& p, RunContext& ctx) {
  set_threads(ctx);
  if (p.text("estimator") == "amp") return amp_simulate_command(p, ctx);
  require_simulable(p);
  RunOutput out;
  const auto alphas = alpha_grid(p);
  const auto seeds = seed_list(p);
  const int d = static_cast<int>(p.integer("d"));
  const std::string training = p.text("training");
  if (p.has("lambda_grid")) {
    out.tables["compare_sim.csv"] = simulate_lambda_compare(p, alphas, d, seeds, ctx);
    out.info["compare"] = "compare_sim.csv: factorised and direct training, each at the lambda of lambda_grid with the "
                          "lowest error on a held-out validation set (n/4 fresh samples); test error at that lambda";
  } else {
    const auto pts = simulate(p, alphas, {d}, seeds, training, ctx, false);
    out.tables["sim.csv"] = sim_table(pts, training);
  }
  out.info["seeds"] = seeds;
  out.info["training"] = training;
  out.info["lambda_weight_decay"] = p.real("lambda") / std::sqrt(p.real("kappa"));
  out.summary = fmt::format("tied-attention simulate: T = {}, d = {}, {} alpha values x {} seeds, training {}",
                            p.integer("T"), d, alphas.size(), seeds.size(), training);
  return out;
}

RunOutput validate_command(const Params& p, RunContext& ctx) {
  set_threads(ctx);
  if (p.text("estimator") == "amp") return amp_validate_command(p, ctx);
  require_simulable(p);
  RunOutput out;
  const auto alphas = alpha_grid(p);
  const auto seeds = seed_list(p);
  const auto dims = validate_dims(p);
  const std::string training = p.text("training");
  const int T = static_cast<int>(p.integer("T"));
  const double zc = p.real("z_crit"), floor = p.real("rel_floor");
  const TheoryCurve th = theory_curve(p, alphas, nullptr, ctx.threads);
  {
    // A dense theory curve for the figures (the checks use the α grid and its error bars).
    const double lo = 0.8 * *std::min_element(alphas.begin(), alphas.end());
    const double hi = 1.1 * *std::max_element(alphas.begin(), alphas.end());
    const int nd = closed_form_applies(p) ? 60 : 20;
    std::vector<double> dense;
    for (int i = 0; i < nd; ++i) dense.push_back(lo + (hi - lo) * i / (nd - 1.0));
    out.tables["curve.csv"] = curve_table(theory_curve(p, dense, nullptr, ctx.threads, nullptr, false).states, nullptr,
                                          p.real("kappa"));
    out.tables["theory_points.csv"] = curve_table(th.states, nullptr, p.real("kappa"), &th.errors);
  }
  const auto pts = simulate(p, alphas, dims, seeds, training, ctx, true, &th.states);
  out.tables["sim.csv"] = sim_table(pts, training, true);

  // Per α and observable: the paired difference (simulation − theory at the seed's own target
  // spectrum) extrapolated to d → ∞ must vanish. Pairing removes the teacher's fluctuations.
  InverseSizeCheck check({"alpha", "observable"}, dims, {zc, floor}, {"paired_diff", "paired_se"});
  for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
    const FixedPointState& s = th.states[ia];
    struct Obs {
      const char* name;
      double theory;
      Stat SimPoint::*sim;
      Stat SimPoint::*diff;
    };
    std::vector<Obs> obs = {{"mse", s.mse, &SimPoint::mse, &SimPoint::d_mse},
                            {"train_loss", s.train_loss, &SimPoint::train_loss, &SimPoint::d_train_loss},
                            {"rank", s.rank, &SimPoint::rank, &SimPoint::d_rank}};
    if (T >= 2) obs.insert(obs.begin(), {"test_error", s.test_error, &SimPoint::test_error, &SimPoint::d_test_error});
    if (training == "direct") obs.pop_back();  // the Frobenius estimator is full rank
    for (const auto& o : obs) {
      std::vector<SizeMeasurement> per_dim;
      bool theory_ok = s.converged;
      for (const auto& sp : pts) {
        if (sp.alpha != alphas[ia]) continue;
        const Stat& df = sp.*(o.diff);
        // Rank is quantised in steps of 1/d: never trust a standard error below that resolution.
        const double fit_se = std::string(o.name) == "rank" ? std::max(df.se, 1.0 / (sp.d * std::sqrt(12.0 * df.n))) : df.se;
        per_dim.push_back({sp.*(o.sim), df, fit_se});
        theory_ok = theory_ok && sp.th_converged == 1.0;
      }
      check.add({alphas[ia], std::string(o.name)}, o.theory, per_dim, theory_ok);
    }
  }
  out.tables["validate.csv"] = check.table();

  // Eigenvalue histogram of the learned S (largest d, pooled seeds) against the predicted law, at
  // the α of `spectrum` or the middle of the grid.
  const std::size_t ih = p.has("spectrum") ? std::min_element(alphas.begin(), alphas.end(), [&](double a, double b) {
                                               return std::fabs(a - p.real("spectrum")) < std::fabs(b - p.real("spectrum"));
                                             }) - alphas.begin()
                                           : alphas.size() / 2;
  if (training != "direct" && th.states[ih].converged) {
    const FixedPointState& s = th.states[ih];
    const auto target = make_target_law(p);
    const auto law = make_law(target, s.delta);
    std::vector<double> ev;
    int zeros = 0, total = 0;
    for (const auto& sp : pts) {
      if (sp.alpha != alphas[ih] || sp.d != dims.back()) continue;
      for (const auto& e : sp.eigenvalues)
        for (Eigen::Index i = 0; i < e.size(); ++i) {
          ++total;
          if (e(i) > 1e-4 * std::max(1e-300, e.cwiseAbs().maxCoeff())) ev.push_back(e(i));
          else ++zeros;
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
    out.info["histogram"] = {{"alpha", alphas[ih]}, {"d", dims.back()}, {"atom_sim", total ? double(zeros) / total : 0.0},
                             {"atom_theory", 1 - s.rank}};
  }

  // Factorised vs convex training on the same data (smallest d): the same minimiser when the width
  // is not binding.
  if (training == "factorized") {
    double maxdiff = 0;
    std::vector<double> diffs;
    for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
      const SimJob job{alphas[ia], dims.front(), seeds.front(), ia};
      const SimRecord a = run_job(p, job, training, false, nullptr), b = run_job(p, job, "convex", false, nullptr);
      maxdiff = std::max(maxdiff, std::fabs(a.mse - b.mse));
      diffs.push_back(a.mse - b.mse);
    }
    out.info["same_data"] = {{"compared", training + " vs convex"}, {"d", dims.front()}, {"mse_differences", diffs},
                             {"max_abs_difference", maxdiff}};
  }

  out.info["verdict"] = check.verdict("the mean paired difference (simulation - theory at the seed's own target spectrum); "
                                      "every theory point converged");
  out.info["dims"] = dims;
  out.info["seeds"] = seeds;
  out.info["theory_solver"] = th.summary;
  out.exit_code = check.agree() ? 0 : 1;
  out.summary = fmt::format("tied-attention validate (T = {}, {} training): {} of {} checks pass -> {}", T, training,
                            check.checks() - check.failures(), check.checks(), check.agree() ? "agree" : "DISAGREE");
  return out;
}

namespace {

std::vector<double> column(const Table& t, const std::string& c) { return t.has_column(c) ? t.numbers(c) : std::vector<double>{}; }

// Rows of `t` where column `key` equals `value`.
Table filter_rows(const Table& t, const std::string& key, double value) {
  Table out(t.columns());
  for (std::size_t i = 0; i < t.rows(); ++i)
    if (t.number(i, key) == value) out.add_row(t.row(i));
  return out;
}

plot::Series line(const std::string& label, std::vector<double> x, std::vector<double> y, plot::Style st = plot::Style::lines,
                  int color = -1) {
  plot::Series s;
  s.label = label;
  s.x = std::move(x);
  s.y = std::move(y);
  s.style = st;
  s.color = color;
  return s;
}

plot::Series vline(const std::string& label, double x, double y0, double y1, int color) {
  return line(label, {x, x}, {y0, y1}, plot::Style::dashed, color);
}


void add_sim_points(plot::Panel& panel, const Table& sim, const std::string& col, int color_base) {
  if (sim.empty() || !sim.has_column(col)) return;
  int c = color_base;
  for (double d : distinct(sim.numbers("d"))) {
    const Table s = filter_rows(sim, "d", d);
    plot::Series e = line(fmt::format("ERM d = {}", d), s.numbers("alpha"), s.numbers(col), plot::Style::errorbars, c++);
    e.yerr = column(s, col + "_se");
    panel.series.push_back(e);
  }
}

}  // namespace

void plot_folder(const std::filesystem::path& dir) {
  amp_plot_folder(dir);
  const json run = json::parse(read_file(dir / "run.json"));
  if (run.value("estimator", "") == "amp" || std::filesystem::exists(dir / "amp_trajectory.csv"))
    return;  // AMP's figures only
  const std::string command = run.value("command", "");
  const auto has = [&](const char* f) { return std::filesystem::exists(dir / f); };
  const Table curve = has("curve.csv") ? Table::read_csv_file((dir / "curve.csv").string()) : Table();
  const Table sim = has("sim.csv") ? Table::read_csv_file((dir / "sim.csv").string()) : Table();
  if (!curve.empty() || !sim.empty()) {
    plot::Figure f;
    f.title = fmt::format("tied-attention {}: T = {}, kappa0 = {}, noise = {}, lambda = {}", command,
                          run["config"].value("T", 0), run["config"].value("kappa0", 0.0), run["config"].value("noise", 0.0),
                          run["config"].value("lambda", 0.0));
    struct P {
      const char* col;
      const char* title;
    };
    for (const P& pp : {P{"mse", "matrix error |S - S0|_F^2/d"}, P{"test_error", "test error (fresh samples)"},
                        P{"train_loss", "training loss per sample"}, P{"rank", "rank(S)/d"}}) {
      plot::Panel panel;
      panel.title = pp.title;
      panel.xlabel = "alpha = n/d^2";
      panel.ylabel = pp.col;
      if (!curve.empty()) panel.series.push_back(line("theory", curve.numbers("alpha"), curve.numbers(pp.col), plot::Style::lines, 0));
      if (!curve.empty() && std::string(pp.col) == "mse" && curve.has_column("bayes_mse"))
        panel.series.push_back(line("Bayes-optimal", curve.numbers("alpha"), curve.numbers("bayes_mse"), plot::Style::dashed, 1));
      add_sim_points(panel, sim, pp.col, 2);
      if (!sim.empty()) {
        const auto a = sim.numbers("alpha");
        const double lo = *std::min_element(a.begin(), a.end()), hi = *std::max_element(a.begin(), a.end());
        const double pad = 0.08 * std::max(hi - lo, 0.1 * hi);
        panel.xrange = std::make_pair(std::max(0.0, lo - pad), hi + pad);
      }
      if (run.contains("thresholds") && (std::string(pp.col) == "mse" || std::string(pp.col) == "train_loss")) {
        double top = 0;
        for (const auto& s : panel.series)
          for (double y : s.y)
            if (std::isfinite(y)) top = std::max(top, y);
        const auto& th = run["thresholds"];
        if (th.contains("alpha_interp") && th["alpha_interp"].is_number())
          panel.series.push_back(vline("alpha_interp", th["alpha_interp"].get<double>(), 0, top, 7));
        if (th.contains("alpha_perf")) panel.series.push_back(vline("alpha_perf", th["alpha_perf"].get<double>(), 0, top, 8));
      }
      f.panels.push_back(panel);
    }
    plot::render(f, dir / (command == "curve" ? "curve" : command == "simulate" ? "sim" : "validate"));
  }
  if (has("spectrum.csv")) {
    const Table sp = Table::read_csv_file((dir / "spectrum.csv").string());
    const Table sw = Table::read_csv_file((dir / "spectrum_w.csv").string());
    const auto& info = run["spectrum"];
    plot::Figure f;
    f.title = fmt::format("learned spectrum at alpha = {}: atom {:.4f} at 0, {} outliers", info.value("alpha", 0.0),
                          info.value("atom_at_zero", 0.0), info["outliers"].size());
    plot::Panel a;
    a.title = "eigenvalues of S (bulk)";
    a.xlabel = "x";
    a.ylabel = "density";
    a.series.push_back(line("theory", sp.numbers("x"), sp.numbers("density"), plot::Style::lines, 0));
    for (const auto& o : info["outliers"]) a.series.push_back(vline("", o["position"].get<double>(), 0, 0.05, 1));
    plot::Panel b;
    b.title = "singular values of W / sqrt(d)";
    b.xlabel = "sigma";
    b.ylabel = "density";
    b.series.push_back(line("theory", sw.numbers("sv"), sw.numbers("density"), plot::Style::lines, 0));
    f.panels = {a, b};
    plot::render(f, dir / "spectrum");
  }
  if (has("decomposition.csv")) {
    const Table dc = Table::read_csv_file((dir / "decomposition.csv").string());
    const auto& sc = run["scaling"];
    plot::Figure f;
    f.title = fmt::format("power-law target, gamma = {}: fitted exponent {} (f(gamma) = 1 - 1/(2 gamma) = {:.3f})",
                          run["config"].value("gamma", 0.0),
                          sc["exponent"].is_number() ? fmt::format("{:.3f}", sc["exponent"].get<double>()) : std::string("n/a"),
                          sc.value("f_gamma", 0.0));
    plot::Panel a;
    a.title = "excess error against n/d";
    a.xlabel = "n/d";
    a.ylabel = "excess error";
    a.logx = a.logy = true;
    a.series.push_back(line("theory", dc.numbers("n_over_d"), dc.numbers("excess_error"), plot::Style::linespoints, 0));
    if (sc["exponent"].is_number()) {
      std::vector<double> x = dc.numbers("n_over_d"), y;
      for (double v : x) y.push_back(sc["prefactor"].get<double>() * std::pow(v, -sc["exponent"].get<double>()));
      a.series.push_back(line("fit", x, y, plot::Style::dashed, 1));
      std::vector<double> yf;
      for (double v : x) yf.push_back(y.front() * std::pow(v / x.front(), -sc["f_gamma"].get<double>()));
      a.series.push_back(line("slope -f(gamma)", x, yf, plot::Style::dashed, 2));
    }
    plot::Panel b;
    b.title = "emergence: learned outliers";
    b.xlabel = "n/d";
    b.ylabel = "count";
    b.logx = true;
    b.series.push_back(line("outliers above the threshold", dc.numbers("n_over_d"), dc.numbers("outliers"), plot::Style::linespoints, 0));
    b.series.push_back(line("K(delta) = #{s_i > delta}", dc.numbers("n_over_d"), dc.numbers("K_delta"), plot::Style::dashed, 1));
    plot::Panel c;
    c.title = "error decomposition";
    c.xlabel = "n/d";
    c.ylabel = "contribution to |S - S0|^2/d";
    c.logx = c.logy = true;
    c.series.push_back(line("MSE (full theory)", dc.numbers("n_over_d"), dc.numbers("mse"), plot::Style::lines, 0));
    c.series.push_back(line("overfitting (bulk)", dc.numbers("n_over_d"), dc.numbers("E_over"), plot::Style::linespoints, 1));
    c.series.push_back(line("underfitting (hidden modes)", dc.numbers("n_over_d"), dc.numbers("E_under"), plot::Style::linespoints, 2));
    c.series.push_back(line("approximation (outliers)", dc.numbers("n_over_d"), dc.numbers("E_approx"), plot::Style::linespoints, 3));
    c.series.push_back(line("sum", dc.numbers("n_over_d"), dc.numbers("E_sum"), plot::Style::dashed, 4));
    f.panels = {a, b, c};
    f.columns = 3;
    plot::render(f, dir / "scaling");
  }
  if (has("compare.csv") || has("compare_sim.csv")) {
    plot::Figure f;
    f.title = "factorised (weight decay on W) vs direct (Frobenius on S) training, each at its best lambda";
    plot::Panel a;
    a.xlabel = "alpha = n/d^2";
    a.ylabel = "test error";
    if (has("compare.csv")) {
      const Table t = Table::read_csv_file((dir / "compare.csv").string());
      a.series.push_back(line("theory, factorised", t.numbers("alpha"), t.numbers("test_error_factorized"), plot::Style::lines, 0));
      a.series.push_back(line("theory, direct", t.numbers("alpha"), t.numbers("test_error_direct"), plot::Style::lines, 1));
    }
    if (has("compare_sim.csv")) {
      const Table t = Table::read_csv_file((dir / "compare_sim.csv").string());
      for (int k = 0; k < 2; ++k) {
        Table sub(t.columns());
        for (std::size_t i = 0; i < t.rows(); ++i)
          if (t.text(i, "training") == kTrainings[k]) sub.add_row(t.row(i));
        plot::Series e = line(std::string("ERM (cross-validated), ") + kTrainings[k], sub.numbers("alpha"),
                              sub.numbers("test_error"), plot::Style::errorbars, k);
        e.yerr = sub.numbers("test_error_se");
        a.series.push_back(e);
      }
    }
    f.panels = {a};
    f.columns = 1;
    plot::render(f, dir / "compare");
  }
  if (has("histogram.csv")) {
    const Table h = Table::read_csv_file((dir / "histogram.csv").string());
    plot::Figure f;
    const auto& info = run["histogram"];
    f.title = fmt::format("eigenvalues of the learned S, alpha = {}, d = {}: atom {:.3f} (theory {:.3f})",
                          info.value("alpha", 0.0), info.value("d", 0), info.value("atom_sim", 0.0), info.value("atom_theory", 0.0));
    plot::Panel a;
    a.title = "eigenvalues of S";
    a.xlabel = "eigenvalue";
    a.ylabel = "density (bulk)";
    a.series.push_back(line("ERM (pooled seeds)", h.numbers("x"), h.numbers("sim_density"), plot::Style::points, 2));
    a.series.push_back(line("theory", h.numbers("x"), h.numbers("theory_density"), plot::Style::lines, 0));
    // The same law for the singular values of W / sqrt(d): sigma = (sqrt(kappa) x)^{1/2}, density x 2 sigma/sqrt(kappa).
    const double kappa = run["config"].value("kappa", 1.0);
    std::vector<double> sv, ds, dt;
    const auto x = h.numbers("x"), ys = h.numbers("sim_density"), yt = h.numbers("theory_density");
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double sg = std::sqrt(std::sqrt(kappa) * x[i]);
      sv.push_back(sg);
      ds.push_back(ys[i] * 2 * sg / std::sqrt(kappa));
      dt.push_back(yt[i] * 2 * sg / std::sqrt(kappa));
    }
    plot::Panel b;
    b.title = "singular values of W / sqrt(d)";
    b.xlabel = "sigma";
    b.ylabel = "density (bulk)";
    b.series.push_back(line("ERM (pooled seeds)", sv, ds, plot::Style::points, 2));
    b.series.push_back(line("theory", sv, dt, plot::Style::lines, 0));
    f.panels = {a, b};
    f.columns = 2;
    plot::render(f, dir / "histogram");
  }
}

std::vector<double> distinct(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace hdat::tied
