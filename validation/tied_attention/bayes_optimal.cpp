#include "hdat/tied_attention/bayes_optimal.hpp"
#include "hdat/core/exit_code.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "hdat/core/error.hpp"
#include "hdat/core/finite_size_check.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/parallel_jobs.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/tied_attention/declaration.hpp"
#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/thresholds.hpp"
#include "hdat/core/constants.hpp"

namespace hdat::tied_attention {

namespace {

using json = nlohmann::json;

ChannelInformationOptions information_options(const Config& c, int threads) {
  ChannelInformationOptions o;
  o.samples = c.se_samples;
  o.seed = c.mc_seed;
  o.sampling = c.sampling;
  o.threads = threads;
  return o;
}

long sample_count(double alpha, int d) { return std::max(1L, std::lround(alpha * d * d)); }

struct AmpJob {
  double alpha = 0;
  std::size_t ia = 0;
  int d = 0;
  long seed = 0;
};

struct AmpRun {
  AmpSummary amp;
  StateEvolutionRun se;  ///< amp_prior=oracle: at this run's own target spectrum; law: the shared one
  bool ok = false;       ///< AMP ended without a numerical failure
};

// The data AMP sees, from the same streams as ERM's: the same data for the same seed.
AmpData make_amp_data(const Config& c, const AmpJob& job) {
  const double noise = c.noise;
  const long n = sample_count(job.alpha, job.d);
  const auto replica = run_replica(job.d, job.ia);
  const auto seed = static_cast<std::uint64_t>(job.seed);
  if (c.T == 1) return amp_data(make_sensing_data(teacher_spec(c, job.d), n, noise, seed, replica));
  const AttentionSpec as = attention_spec(c, job.d, noise);
  auto eng = rng::engine(seed, replica, rng::teacher);
  const Eigen::MatrixXd S0 = sample_teacher(as.teacher, eng);
  return amp_data(make_attention_data(as, S0, n, seed, replica, rng::training_data), c.channel);
}

AmpRun run_amp_job(const Config& c, const AmpJob& job, const StateEvolutionRun* shared_se) {
  AmpRun r;
  const AmpData data = make_amp_data(c, job);
  const auto prior = c.oracle_prior ? empirical_target(data.S0) : c.target_law_at(job.d);
  r.amp = Amp(amp_options(c, prior)).run(data);
  r.ok = r.amp.converged || r.amp.termination == "max_iter";
  r.se = shared_se ? *shared_se : StateEvolution(state_evolution_options(c, prior)).run(job.alpha, c.amp_max_iter);
  return r;
}

// The law's state evolution, one per α (and per d for a finite-d power-law target).
using SeKey = std::pair<std::size_t, int>;
SeKey se_key(const Config& c, std::size_t ia, int d) { return {ia, c.target == Target::wishart ? 0 : d}; }

std::map<SeKey, StateEvolutionRun> shared_state_evolutions(const Config& c, const std::vector<double>& alphas,
                                                           const std::vector<int>& dims) {
  std::vector<SeKey> keys;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (int d : dims)
      if (std::find(keys.begin(), keys.end(), se_key(c, ia, d)) == keys.end()) keys.push_back(se_key(c, ia, d));
  std::vector<StateEvolutionRun> runs(keys.size());
  for_each_job(keys.size(), [&](std::size_t k) {
    const int d = keys[k].second > 0 ? keys[k].second : dims.front();
    runs[k] = StateEvolution(state_evolution_options(c, c.target_law_at(d))).run(alphas[keys[k].first], c.amp_max_iter);
  });
  std::map<SeKey, StateEvolutionRun> out;
  for (std::size_t k = 0; k < keys.size(); ++k) out[keys[k]] = std::move(runs[k]);
  return out;
}

struct AmpBatch {
  std::vector<AmpJob> jobs;
  std::vector<AmpRun> runs;
  std::map<SeKey, StateEvolutionRun> shared;  ///< empty with amp_prior=oracle
};

AmpBatch run_batch(const Config& c, const std::vector<double>& alphas, const std::vector<int>& dims,
                   const std::vector<long>& seeds, const RunContext& ctx) {
  AmpBatch b;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (int d : dims)
      for (long s : seeds) b.jobs.push_back({alphas[ia], ia, d, s});
  std::stable_sort(b.jobs.begin(), b.jobs.end(), [](const AmpJob& x, const AmpJob& y) {
    return x.alpha * std::pow(x.d, 4) > y.alpha * std::pow(y.d, 4);  // largest first: load balance
  });
  if (!c.oracle_prior) b.shared = shared_state_evolutions(c, alphas, dims);
  b.runs.resize(b.jobs.size());
  Progress progress("AMP", static_cast<long>(b.jobs.size()), !ctx.quiet);
  for_each_job(
      b.jobs.size(),
      [&](std::size_t k) {
        const AmpJob& job = b.jobs[k];
        const StateEvolutionRun* se = b.shared.empty() ? nullptr : &b.shared.at(se_key(c, job.ia, job.d));
        b.runs[k] = run_amp_job(c, job, se);
      },
      &progress);
  return b;
}

// ---------------------------------------------------------------------------------------------
// Trajectories: iterate t of AMP (continued at its last iterate once it stopped) against step t of
// the state evolution (continued at its fixed point).

const AmpIteration& amp_at(const AmpSummary& s, int t) {
  return s.iterations[static_cast<std::size_t>(std::min<int>(t, s.steps()))];
}
const StateEvolutionStep& se_at(const StateEvolutionRun& r, int t) {
  return r.steps[static_cast<std::size_t>(std::min<int>(t, static_cast<int>(r.steps.size()) - 1))];
}

struct Trajectory {  // one (α, d), per iteration, over seeds
  std::vector<Stat> mse, m, q, se_mse, diff_mse, diff_m;
  Stat iterations, converged, seconds, seconds_per_iteration, eig_per_iteration, v_estimate;
  int failed = 0;
};

Trajectory trajectory_of(const std::vector<const AmpRun*>& runs, int steps) {
  Trajectory tr;
  for (int t = 0; t <= steps; ++t) {
    std::vector<double> mse, m, q, sv, dmse, dm;
    for (const AmpRun* r : runs) {
      const AmpIteration& a = amp_at(r->amp, t);
      const StateEvolutionStep& s = se_at(r->se, t);
      mse.push_back(a.mse);
      m.push_back(a.m);
      q.push_back(a.q);
      sv.push_back(s.v);
      dmse.push_back(a.mse - s.v);
      dm.push_back(a.m - s.q);  // Nishimori: the SE's overlap m_t = q_t = Q0 − v_t
    }
    for (auto [out, v] : {std::pair{&tr.mse, &mse}, {&tr.m, &m}, {&tr.q, &q}, {&tr.se_mse, &sv}, {&tr.diff_mse, &dmse},
                          {&tr.diff_m, &dm}})
      out->push_back(stats::mean_se(*v));
  }
  std::vector<double> it, conv, sec, spi, epi, vest;
  for (const AmpRun* r : runs) {
    const int n = std::max(1, r->amp.steps());
    it.push_back(r->amp.steps());
    conv.push_back(r->amp.converged ? 1.0 : 0.0);
    sec.push_back(r->amp.wall_seconds);
    spi.push_back(r->amp.wall_seconds / n);
    epi.push_back(r->amp.eig_seconds / n);
    vest.push_back(r->amp.last().v_estimate);
    tr.failed += r->ok ? 0 : 1;
  }
  tr.iterations = stats::mean_se(it);
  tr.converged = stats::mean_se(conv);
  tr.seconds = stats::mean_se(sec);
  tr.seconds_per_iteration = stats::mean_se(spi);
  tr.eig_per_iteration = stats::mean_se(epi);
  tr.v_estimate = stats::mean_se(vest);
  return tr;
}

// Trajectories by (α index, d).
std::map<std::pair<std::size_t, int>, Trajectory> trajectories(const AmpBatch& b, int steps) {
  std::map<std::pair<std::size_t, int>, std::vector<const AmpRun*>> groups;
  for (std::size_t k = 0; k < b.jobs.size(); ++k) groups[{b.jobs[k].ia, b.jobs[k].d}].push_back(&b.runs[k]);
  std::map<std::pair<std::size_t, int>, Trajectory> out;
  for (const auto& [key, runs] : groups) out[key] = trajectory_of(runs, steps);
  return out;
}

Table amp_sim_table(const std::vector<double>& alphas, const std::vector<int>& dims,
                const std::map<std::pair<std::size_t, int>, Trajectory>& tr, int steps) {
  Table t({"alpha", "d", "n", "estimator", "mse", "mse_se", "m", "m_se", "q", "q_se", "v_estimate", "theory_mse",
           "paired_mse_diff", "paired_mse_diff_se", "seeds", "iterations", "converged_fraction", "seconds_per_run",
           "seconds_per_iteration", "eigendecomposition_seconds_per_iteration"});
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (int d : dims) {
      const Trajectory& g = tr.at({ia, d});
      const auto S = static_cast<std::size_t>(steps);
      t.add_row({alphas[ia], double(d), double(sample_count(alphas[ia], d)), std::string("amp"), g.mse[S].mean,
                 g.mse[S].se, g.m[S].mean, g.m[S].se, g.q[S].mean, g.q[S].se, g.v_estimate.mean, g.se_mse[S].mean,
                 g.diff_mse[S].mean, g.diff_mse[S].se, double(g.mse[S].n), g.iterations.mean, g.converged.mean,
                 g.seconds.mean, g.seconds_per_iteration.mean, g.eig_per_iteration.mean});
    }
  return t;
}

Table trajectory_table(const std::vector<double>& alphas, const std::vector<int>& dims,
                       const std::map<std::pair<std::size_t, int>, Trajectory>& tr, int steps) {
  Table t({"alpha", "d", "iteration", "mse", "mse_se", "m", "m_se", "q", "q_se", "se_mse", "diff_mse", "diff_mse_se",
           "diff_m", "diff_m_se"});
  for (std::size_t ia = 0; ia < alphas.size(); ++ia)
    for (int d : dims) {
      const Trajectory& g = tr.at({ia, d});
      for (int it = 0; it <= steps; ++it) {
        const auto i = static_cast<std::size_t>(it);
        t.add_row({alphas[ia], double(d), double(it), g.mse[i].mean, g.mse[i].se, g.m[i].mean, g.m[i].se, g.q[i].mean,
                   g.q[i].se, g.se_mse[i].mean, g.diff_mse[i].mean, g.diff_mse[i].se, g.diff_m[i].mean, g.diff_m[i].se});
      }
    }
  return t;
}

Table iterations_table(const AmpBatch& b) {
  Table t({"alpha", "d", "seed", "iteration", "mse", "m", "q", "v_estimate", "delta", "residual", "seconds", "se_mse"});
  for (std::size_t k = 0; k < b.jobs.size(); ++k) {
    const AmpJob& j = b.jobs[k];
    for (const AmpIteration& a : b.runs[k].amp.iterations)
      t.add_row({j.alpha, double(j.d), double(j.seed), double(a.t), a.mse, a.m, a.q, a.v_estimate, a.delta, a.residual,
                 a.seconds, se_at(b.runs[k].se, a.t).v});
  }
  return t;
}

Table state_evolution_table(const std::vector<double>& alphas, const AmpBatch& b, const std::vector<int>& dims) {
  Table t({"alpha", "d", "iteration", "v", "q", "information", "information_se", "delta"});
  for (const auto& [key, se] : b.shared)
    for (const StateEvolutionStep& s : se.steps)
      t.add_row({alphas[key.first], double(key.second > 0 ? key.second : dims.front()), double(s.t), s.v, s.q,
                 s.information, s.information_se, s.delta});
  return t;
}

json runs_json(const AmpBatch& b) {
  json a = json::array();
  for (std::size_t k = 0; k < b.jobs.size(); ++k) {
    json j = b.runs[k].amp.to_json();
    j["alpha"] = b.jobs[k].alpha;
    j["d"] = b.jobs[k].d;
    j["seed"] = b.jobs[k].seed;
    j["brief"] = b.runs[k].amp.brief();
    j["state_evolution"] = b.runs[k].se.summary_json();
    a.push_back(j);
  }
  return a;
}

// The state evolution of the first run at (α index, d): with amp_prior=oracle each run has its own,
// but their transients agree to O(1/d), so one of them places the checkpoints of that α.
const StateEvolutionRun& state_evolution_at(const AmpBatch& b, std::size_t ia, int d) {
  for (std::size_t k = 0; k < b.jobs.size(); ++k)
    if (b.jobs[k].ia == ia && b.jobs[k].d == d) return b.runs[k].se;
  throw std::logic_error("no AMP run at this alpha and d");
}

// The compared iterations: the SE's transient at 1, 2, 3, 4, 6, 8, 12, 16, ... until it has settled
// (within 1e-4 Q0 of its end), and the last iterate (the fixed point). Consecutive iterates are
// strongly correlated; a sparse set keeps the number of checks (and of false alarms) small.
std::vector<int> checkpoints(const StateEvolutionRun& se, int steps, double Q0) {
  int settled = steps;
  for (int t = 0; t <= steps; ++t)
    if (std::fabs(se_at(se, t).v - se_at(se, steps).v) <= 1e-4 * Q0) {
      settled = t;
      break;
    }
  std::vector<int> out;
  for (int t = 1; t < settled && t < steps; t = t < 4 ? t + 1 : t + t / 2) out.push_back(t);
  out.push_back(steps);
  return out;
}

std::vector<int> amp_dims(const Config& c) { return c.dims.empty() ? std::vector<int>{50, 100, 150} : c.dims; }

std::string amp_prior_name(const Config& c) { return c.oracle_prior ? "oracle" : "law"; }

void describe(RunOutput& out, const Config& c, const AmpBatch& b) {
  out.info["estimator"] = "amp";
  out.info["channel"] = c.channel_name();
  out.info["amp_prior"] = amp_prior_name(c);
  out.info["amp"] = runs_json(b);
  out.info["note"] =
      "AMP = GAMP with the RIE denoiser (derivation.md section 10); iterate t is compared with step t of its state "
      "evolution; amp_iterations.csv per run, amp_trajectory.csv per (alpha, d) over seeds, sim.csv at the last "
      "iterate (mse = |S - S0|_F^2/d as for ERM)";
}

}  // namespace

// =============================================================================================

StateEvolutionOptions state_evolution_options(const Config& c, std::shared_ptr<const TargetLaw> prior, int threads) {
  StateEvolutionOptions o;
  o.T = c.T;
  o.channel = c.channel;
  o.noise = c.noise;
  o.prior = std::move(prior);
  o.quadrature = c.quadrature();
  o.information = information_options(c, threads);
  o.shrinkage_factor = c.broken.shrinkage;
  o.information_factor = c.broken.information;
  return o;
}

AmpOptions amp_options(const Config& c, std::shared_ptr<const TargetLaw> prior) {
  AmpOptions o;
  o.noise = c.noise;
  o.prior = std::move(prior);
  o.max_iter = c.amp_max_iter;
  o.tol = c.amp_tol;
  o.damping = c.amp_damping;
  return o;
}

BayesColumn bayes_column(const Config& cfg, const std::shared_ptr<const TargetLaw>& target, const std::vector<double>& alphas) {
  BayesColumn c;
  const int T = cfg.T;
  const BayesChannel ch = cfg.channel;
  if (ch == BayesChannel::hardmax && T != 2) {
    c.mse.assign(alphas.size(), kNaN);
    c.se.assign(alphas.size(), kNaN);
    c.info["note"] = "the hardmax Bayes-optimal error is implemented for T = 2";
    return c;
  }
  const auto pts = bayes_optimal_curve(target, cfg.noise, T, ch, alphas, LawMethod::automatic, information_options(cfg, 0));
  for (const auto& b : pts) {
    c.mse.push_back(b.mmse);
    c.se.push_back(b.mmse_se);
  }
  c.info["channel"] = bayes_channel_name(ch);
  c.info["note"] = ch == BayesChannel::hardmax
                       ? "state evolution iterated from the uninformed start; channel update by QMC (se_samples points, "
                         "common random numbers); bayes_mse_se its sampling error"
                       : "fixed point mmse(w) + noise/2 = 2 alpha k w, k = the fields the labels fix (T = 1: 1; softmax: "
                         "(T^2 + T - 2)/2 for every beta0; linear: T(T + 1)/2), largest root";
  return c;
}

Table bayes_gap_table(const std::vector<LambdaScanPoint>& scan, const std::vector<double>& alphas, const BayesColumn& bayes) {
  Table t({"alpha", "bayes_mse", "best_erm_mse", "lambda_star", "gap", "ratio"});
  for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
    double best = kNaN, lam = kNaN;
    for (const LambdaScanPoint& s : scan) {
      if (s.alpha != alphas[ia] || s.training != Training::factorized || !s.converged) continue;
      if (!(s.mse >= best)) {
        best = s.mse;
        lam = s.lambda;
      }
    }
    const double b = bayes.mse[ia];
    t.add_row({alphas[ia], b, best, lam, best - b, best / b});
  }
  return t;
}

json bayes_perfect_recovery(const Config& c, double rank_fraction) {
  const BayesChannel ch = c.channel;
  if (c.noise > 0 || ch == BayesChannel::hardmax) return nullptr;
  const int T = c.T;
  if (ch == BayesChannel::linear && T >= 2) return alpha_pr(rank_fraction, 1) / (T * (T + 1) / 2.0);
  return alpha_pr(rank_fraction, T);
}

// The tables and record simulate and validate both write from one batch of AMP runs.
void add_batch_outputs(RunOutput& out, const Config& c, const std::vector<double>& alphas, const std::vector<int>& dims,
                       const AmpBatch& b, const std::map<std::pair<std::size_t, int>, Trajectory>& tr, int steps) {
  out.tables["sim.csv"] = amp_sim_table(alphas, dims, tr, steps);
  out.tables["amp_trajectory.csv"] = trajectory_table(alphas, dims, tr, steps);
  out.tables["amp_iterations.csv"] = iterations_table(b);
  if (!b.shared.empty()) out.tables["state_evolution.csv"] = state_evolution_table(alphas, b, dims);
  describe(out, c, b);
}

RunOutput amp_simulate_command(const Config& c, RunContext& ctx) {
  RunOutput out;
  const auto& alphas = c.alphas;
  const auto& seeds = c.seeds;
  const std::vector<int> dims = {c.d};
  const int steps = c.amp_max_iter;
  const AmpBatch b = run_batch(c, alphas, dims, seeds, ctx);
  const auto tr = trajectories(b, steps);
  add_batch_outputs(out, c, alphas, dims, b, tr, steps);
  int failed = 0;
  for (const auto& r : b.runs) failed += r.ok ? 0 : 1;
  out.summary = fmt::format("tied-attention simulate (AMP, {} channel): d = {}, {} alpha values x {} seeds, {} failed",
                            c.channel_name(), dims.front(), alphas.size(), seeds.size(), failed);
  if (failed) out.exit_code = code(ExitCode::numerical_failure);
  return out;
}

RunOutput amp_validate_command(const Config& c, RunContext& ctx) {
  RunOutput out;
  const auto& alphas = c.alphas;
  const auto& seeds = c.seeds;
  if (seeds.size() < 2) throw InputError("seeds", "validate needs at least 2 seeds (standard errors)");
  const auto dims = amp_dims(c);
  const int steps = c.amp_max_iter;
  const AmpBatch b = run_batch(c, alphas, dims, seeds, ctx);
  const auto tr = trajectories(b, steps);
  add_batch_outputs(out, c, alphas, dims, b, tr, steps);

  // Per α, compared iteration and observable: the mean difference AMP − SE (per seed with
  // amp_prior=oracle) extrapolated to d → ∞ must vanish.
  InverseSizeCheck check({"alpha", "iteration", "observable"}, dims, c.criterion);
  int failed_runs = 0;
  for (const auto& [key, g] : tr) failed_runs += g.failed;
  for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
    const Trajectory& ref = tr.at({ia, dims.back()});
    const double Q0 = c.target_law_at(dims.back())->second_moment();
    for (int t : checkpoints(state_evolution_at(b, ia, dims.back()), steps, Q0)) {
      for (const char* obs : {"mse", "m"}) {
        const bool is_mse = std::string(obs) == "mse";
        const auto i = static_cast<std::size_t>(t);
        const double theory = is_mse ? ref.se_mse[i].mean : Q0 - ref.se_mse[i].mean;
        std::vector<SizeMeasurement> per_dim;
        for (int d : dims) {
          const Trajectory& g = tr.at({ia, d});
          per_dim.push_back({is_mse ? g.mse[i] : g.m[i], is_mse ? g.diff_mse[i] : g.diff_m[i]});
        }
        check.add({alphas[ia], double(t), std::string(obs)}, theory, per_dim, failed_runs == 0);
      }
    }
  }
  out.tables["validate.csv"] = check.table();
  out.info["verdict"] = check.verdict("the mean difference AMP - state evolution, at each compared iteration; no AMP run failed");
  out.info["verdict"]["failed_runs"] = failed_runs;
  out.info["dims"] = dims;
  out.info["seeds"] = seeds;
  const Verdict verdict = check.result();
  out.exit_code = code(verdict.exit_code());
  out.summary = fmt::format("tied-attention validate (AMP vs state evolution, T = {}, {} channel, prior {}): {} of {} "
                            "checks pass -> {}",
                            c.T, c.channel_name(), amp_prior_name(c),
                            check.checks() - check.failures(), check.checks(), verdict_word(verdict));
  for (const std::string& reason : verdict.reasons) out.summary += "\n  " + reason;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Figures.

namespace {


Table rows_where(const Table& t, const std::string& key, double value) {
  Table out(t.columns());
  for (std::size_t i = 0; i < t.rows(); ++i)
    if (t.number(i, key) == value) out.add_row(t.row(i));
  return out;
}

plot::Series series(const std::string& label, std::vector<double> x, std::vector<double> y, plot::Style st, int color,
                    std::vector<double> yerr = {}) {
  plot::Series s;
  s.label = label;
  s.x = std::move(x);
  s.y = std::move(y);
  s.yerr = std::move(yerr);
  s.style = st;
  s.color = color;
  return s;
}

void plot_trajectories(const Table& tr, const std::filesystem::path& stem) {
  plot::Figure f;
  f.title = "AMP (points, mean over seeds) against its state evolution (line), iteration by iteration";
  for (double a : distinct(tr.numbers("alpha"))) {
    const Table ta = rows_where(tr, "alpha", a);
    plot::Panel panel;
    panel.title = fmt::format("alpha = {}", a);
    panel.xlabel = "iteration";
    panel.ylabel = "|S_t - S0|_F^2 / d";
    panel.logy = true;
    const auto dims = distinct(ta.numbers("d"));
    const Table big = rows_where(ta, "d", dims.back());
    panel.series.push_back(series("state evolution", big.numbers("iteration"), big.numbers("se_mse"), plot::Style::lines, 0));
    int c = 1;
    for (double d : dims) {
      const Table td = rows_where(ta, "d", d);
      panel.series.push_back(series(fmt::format("AMP d = {}", d), td.numbers("iteration"), td.numbers("mse"),
                                    plot::Style::errorbars, c++, td.numbers("mse_se")));
    }
    f.panels.push_back(panel);
    if (f.panels.size() == 6) break;
  }
  plot::render(f, stem);
}

void plot_fixed_points(const Table& sim, const std::filesystem::path& stem) {
  plot::Figure f;
  f.columns = 1;
  plot::Panel panel;
  panel.title = "AMP at its last iterate against the state evolution's fixed point";
  panel.xlabel = "alpha = n/d^2";
  panel.ylabel = "|S - S0|_F^2 / d";
  const auto dims = distinct(sim.numbers("d"));
  const Table big = rows_where(sim, "d", dims.back());
  panel.series.push_back(series("state evolution", big.numbers("alpha"), big.numbers("theory_mse"), plot::Style::linespoints, 0));
  int c = 1;
  for (double d : dims) {
    const Table td = rows_where(sim, "d", d);
    panel.series.push_back(
        series(fmt::format("AMP d = {}", d), td.numbers("alpha"), td.numbers("mse"), plot::Style::errorbars, c++, td.numbers("mse_se")));
  }
  f.panels = {panel};
  plot::render(f, stem);
}

}  // namespace

void amp_plot_folder(const std::filesystem::path& dir) {
  const auto tr = dir / "amp_trajectory.csv";
  if (!std::filesystem::exists(tr)) return;
  plot_trajectories(Table::read_csv_file(tr.string()), dir / "amp_trajectory");
  if (std::filesystem::exists(dir / "sim.csv")) plot_fixed_points(Table::read_csv_file((dir / "sim.csv").string()), dir / "amp_fixed_point");
}

}  // namespace hdat::tied_attention
