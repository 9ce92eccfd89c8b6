#include "hdat/specialization/validate.hpp"

#include <fmt/format.h>

#include <cmath>

#include "hdat/core/progress.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/simulate.hpp"
#include "hdat/specialization/simulator.hpp"

namespace hdat::specialization {

namespace {

std::string block_of(const std::string& column) {
  if (column == "risk") return "risk";
  return column.substr(0, column.find('_'));
}

// Least-squares slope of log y against log x.
double loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0 && y[i] > 0)) continue;
    const double lx = std::log(x[i]), ly = std::log(y[i]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
    ++n;
  }
  if (n < 2) return NAN;
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

RunOutput validate_trajectory(const Params& p, RunContext& ctx) {
  const Setup base = setup_from(p);
  const std::vector<long> dims = p.int_vector("dims");
  const std::vector<double> times = observation_times(p);
  const double tol = p.real("tolerance"), rel = p.real("rel_tolerance");
  const StateLayout layout = base.layout();
  std::vector<std::string> quantities = {"risk"};
  for (const auto& c : layout.columns()) quantities.push_back(c);

  Table rows({"D", "t", "quantity", "theory", "simulation", "simulation_se", "theory_se", "deviation", "allowed", "agree"});
  Table escape({"D", "log_D", "escape_time", "escape_time_se", "seeds_escaped", "seeds"});
  Table curves;  // theory and simulation side by side for the figure
  nlohmann::json per_d = nlohmann::json::array();
  std::vector<double> dvals, gaps_M, gaps_R, gaps_risk;
  bool all_agree = true;
  std::string summary = fmt::format("validate specialization ({}, H={}, F={}, L={}, eta={}): theory vs online SGD\n",
                                    activation_name(base.activation), base.H, base.F, base.L, base.eta);
  summary += fmt::format("  {:>6} {:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8}\n", "D", "seeds", "t_cmp", "gap M", "gap R", "gap risk",
                         "max dev/allowed", "verdict");
  std::vector<std::string> curve_cols = {"D", "t"};
  for (const auto& q : quantities) {
    curve_cols.push_back(q + "_theory");
    curve_cols.push_back(q + "_sim");
    curve_cols.push_back(q + "_sim_se");
  }
  curves = Table(curve_cols);

  struct PerD {
    long D;
    Ensemble ens;
    Trajectory th;
    Table th_se;
    double t_cmp, esc_mean, esc_se;
    int escaped;
  };
  std::vector<PerD> runs;
  for (long D : dims) {
    Setup s = base;
    s.D = static_cast<int>(D);
    Ensemble ens = simulate_ensemble(s, times, ensemble_options(p, s.D, s.seed, ctx));
    if (ens.finished == 0 || interrupted()) break;
    // Theory from this D's seed-averaged initial overlaps.
    Eigen::MatrixXd M0(s.H, s.F), R0(s.H, s.H);
    for (int h = 0; h < s.H; ++h) {
      for (int f = 0; f < s.F; ++f) M0(h, f) = ens.mean.number(0, fmt::format("M_{}_{}", h, f));
      for (int k = h; k < s.H; ++k) R0(h, k) = R0(k, h) = ens.mean.number(0, fmt::format("R_{}_{}", h, k));
    }
    // The theory on `theory_replicas` independent sample sets: their mean is compared, and the
    // standard error of that mean is the theory's own Monte Carlo error (it does not shrink with D).
    const int reps = static_cast<int>(p.integer("theory_replicas"));
    std::vector<Trajectory> ths;
    for (int k = 0; k < reps; ++k) {
      FlowOptions fo = flow_options(p, ctx.threads);
      fo.seed += static_cast<std::uint64_t>(k) * 7919;
      const OrderParameterFlow flow(s, fo);
      ths.push_back(integrate_flow(flow, M0, R0, times, integrate_options(p, layout)));
    }
    Trajectory th = ths.front();
    std::size_t rows_all = th.table.rows();
    for (const auto& x : ths) {
      rows_all = std::min(rows_all, x.table.rows());
      if (!x.solver.ok()) th.solver = x.solver;
    }
    Table th_mean(th.table.columns()), th_se(th.table.columns());
    for (std::size_t r = 0; r < rows_all; ++r) {
      std::vector<double> mrow, srow;
      for (const auto& col : th.table.columns()) {
        double m = 0, v = 0;
        for (const auto& x : ths) m += x.table.number(r, col) / reps;
        for (const auto& x : ths) v += std::pow(x.table.number(r, col) - m, 2);
        mrow.push_back(m);
        srow.push_back(reps > 1 ? std::sqrt(v / (reps - 1.0) / reps) : 0.0);
      }
      th_mean.add_row(mrow);
      th_se.add_row(srow);
    }
    th.table = th_mean;
    // The comparison window: up to the first plateau escape among the seeds (unless t_compare is set).
    double t_cmp = p.real("t_compare"), esc_mean = NAN, esc_se = NAN, s1 = 0, s2 = 0, first = INFINITY;
    int escaped = 0;
    for (double e : ens.escape_times)
      if (std::isfinite(e)) s1 += e, s2 += e * e, ++escaped, first = std::min(first, e);
    if (escaped) {
      esc_mean = s1 / escaped;
      esc_se = escaped > 1 ? std::sqrt(std::max(0.0, (s2 / escaped - esc_mean * esc_mean) / (escaped - 1)) / escaped) : NAN;
    }
    if (t_cmp < 0) t_cmp = escaped ? first : times.back();
    runs.push_back({D, std::move(ens), std::move(th), std::move(th_se), t_cmp, esc_mean, esc_se, escaped});
  }
  // The finite-size gap is measured on the window common to every D, so that the fitted exponent
  // compares like with like.
  double t_common = INFINITY;
  for (const auto& r : runs) t_common = std::min(t_common, r.t_cmp);

  for (const auto& run : runs) {
    const long D = run.D;
    const Ensemble& ens = run.ens;
    const Trajectory& th = run.th;
    const double t_cmp = run.t_cmp;
    escape.add_row({static_cast<double>(D), std::log(static_cast<double>(D)), run.esc_mean, run.esc_se, static_cast<double>(run.escaped),
                    static_cast<double>(ens.finished)});
    // Block scales in the window.
    std::map<std::string, double> scale;
    const std::size_t n = std::min(th.table.rows(), ens.mean.rows());
    for (std::size_t r = 0; r < n; ++r) {
      if (ens.mean.number(r, "t") > t_cmp) break;
      for (const auto& q : quantities) scale[block_of(q)] = std::max(scale[block_of(q)], std::fabs(ens.mean.number(r, q)));
    }
    double worst = 0;
    int points = 0, agree = 0;
    std::map<std::string, std::pair<double, int>> gap;
    for (std::size_t r = 0; r < n; ++r) {
      const double t = ens.mean.number(r, "t");
      std::vector<double> crow = {static_cast<double>(D), t};
      for (const auto& q : quantities) {
        crow.push_back(th.table.number(r, q));
        crow.push_back(ens.mean.number(r, q));
        crow.push_back(ens.mean.number(r, q == "risk" ? "risk_se" : q + "_se"));
      }
      curves.add_row(crow);
      if (t > t_cmp) continue;
      for (const auto& q : quantities) {
        const double vt = th.table.number(r, q), vs = ens.mean.number(r, q);
        const double se_s = ens.mean.number(r, q == "risk" ? "risk_se" : q + "_se");
        const double se_t = run.th_se.number(r, q);
        const double se = std::sqrt(se_s * se_s + se_t * se_t);
        const double dev = vt - vs;
        const double allowed = tol * se + rel * scale[block_of(q)];
        const bool ok = std::fabs(dev) <= allowed;
        rows.add_row(std::vector<Cell>{static_cast<double>(D), t, q, vt, vs, se_s, se_t, dev, allowed, ok ? 1.0 : 0.0});
        worst = std::max(worst, std::fabs(dev) / allowed);
        ++points;
        agree += ok;
        if (t <= t_common) {
          auto& g = gap[block_of(q)];
          g.first += dev * dev;
          g.second += 1;
        }
      }
    }
    auto rms = [&](const std::string& b) { return gap.count(b) ? std::sqrt(gap[b].first / gap[b].second) : NAN; };
    const bool d_ok = points > 0 && agree == points && th.solver.ok();
    all_agree = all_agree && d_ok;
    dvals.push_back(static_cast<double>(D));
    gaps_M.push_back(rms("M"));
    gaps_R.push_back(rms("R"));
    gaps_risk.push_back(rms("risk"));
    per_d.push_back({{"D", D},
                     {"seeds", ens.finished},
                     {"t_compare", t_cmp},
                     {"points", points},
                     {"points_agreeing", agree},
                     {"max_deviation_over_allowed", worst},
                     {"gap_rms", {{"M", num(rms("M"))}, {"R", num(rms("R"))}, {"risk", num(rms("risk"))}}},
                     {"escape_time_mean", num(run.esc_mean)},
                     {"escape_time_se", num(run.esc_se)},
                     {"seeds_escaped", run.escaped},
                     {"theory_solver", th.solver.to_json()},
                     {"simulation_seconds", ens.seconds},
                     {"agree", d_ok}});
    summary += fmt::format("  {:>6} {:>6} {:>8.3g} {:>9.2e} {:>9.2e} {:>9.2e} {:>9.2f} {:>8}\n", D, ens.finished, t_cmp, rms("M"), rms("R"),
                           rms("risk"), worst, d_ok ? "agree" : "DISAGREE");
  }
  const double pM = loglog_slope(dvals, gaps_M), pR = loglog_slope(dvals, gaps_R), prisk = loglog_slope(dvals, gaps_risk);
  // Escape time against log D: slope of the mean escape time.
  double slope = NAN;
  {
    std::vector<double> lx, ty;
    for (std::size_t r = 0; r < escape.rows(); ++r)
      if (std::isfinite(escape.number(r, "escape_time"))) lx.push_back(escape.number(r, "log_D")), ty.push_back(escape.number(r, "escape_time"));
    if (lx.size() >= 2) {
      double mx = 0, my = 0;
      for (std::size_t i = 0; i < lx.size(); ++i) mx += lx[i] / lx.size(), my += ty[i] / ty.size();
      double sxy = 0, sxx = 0;
      for (std::size_t i = 0; i < lx.size(); ++i) sxy += (lx[i] - mx) * (ty[i] - my), sxx += (lx[i] - mx) * (lx[i] - mx);
      slope = sxy / sxx;
    }
  }
  const bool interrupted_run = interrupted() || per_d.size() < dims.size();
  RunOutput out;
  out.tables["validate.csv"] = rows;
  out.tables["escape.csv"] = escape;
  out.tables["validate_curves.csv"] = curves;
  nlohmann::json v = {{"mode", "trajectory"},
                      {"verdict", all_agree && !interrupted_run ? "agree" : "disagree"},
                      {"criterion", fmt::format("|theory - simulation| <= {} * SE + {} * scale(block) at every observed time t <= t_compare "
                                                "(t_compare: first plateau escape among the seeds unless set)",
                                                tol, rel)},
                      {"per_D", per_d},
                      {"gap_exponent", {{"M", num(pM)}, {"R", num(pR)}, {"risk", num(prisk)}}},
                      {"gap_window", num(t_common)},
                      {"gap_exponent_expected", -0.5},
                      {"escape_time_slope_vs_log_D", num(slope)}};
  out.files["validate.json"] = v.dump(2) + "\n";
  out.info["validation"] = v;
  summary += fmt::format("  gap ~ D^p on t <= {:.3g}: p = {:.2f} (M), {:.2f} (R), {:.2f} (risk); expected about -0.5\n", t_common, pM, pR,
                         prisk);
  if (std::isfinite(slope)) summary += fmt::format("  plateau escape time vs log D: slope {:.2f}\n", slope);
  summary += fmt::format("  verdict: {}\n", all_agree && !interrupted_run ? "theory and simulation AGREE" : "theory and simulation DISAGREE");
  out.summary = summary;
  out.exit_code = interrupted_run ? 130 : (all_agree ? 0 : 1);
  return out;
}

RunOutput validate_drift(const Params& p, RunContext& ctx) {
  const Setup base = setup_from(p);
  const std::vector<long> dims = p.int_vector("dims");
  const int D = static_cast<int>(dims.back());
  Setup s = base;
  s.D = D;
  const long n = p.integer("drift_samples");
  const double tol = p.real("tolerance");
  const Eigen::VectorXd tcheck = p.vector("drift_times");
  const OrderParameterFlow flow(s, flow_options(p, ctx.threads));
  OnlineSGD sgd(s, D, s.seed, 0);

  Table rows({"t", "term", "entry", "theory", "theory_se", "simulation", "simulation_se", "z", "agree"});
  bool all_ok = true;
  double worst = 0;
  std::string summary = fmt::format("drift check specialization ({}, H={}, F={}, L={}, eta={}, D={}, {} samples per configuration)\n",
                                    activation_name(s.activation), s.H, s.F, s.L, s.eta, D, n);
  Progress progress("drift check", tcheck.size() * n, !ctx.quiet);
  for (Eigen::Index c = 0; c < tcheck.size(); ++c) {
    sgd.advance_to(tcheck(c));
    const Eigen::MatrixXd M = sgd.M(), R = sgd.R();
    // Empirical mean and standard error of D × increments at these fixed weights.
    const int H = s.H, F = s.F;
    Eigen::MatrixXd sM = Eigen::MatrixXd::Zero(H, F), qM = sM, sD = Eigen::MatrixXd::Zero(H, H), qD = sD, sN = sD, qN = sD;
    for (long i = 0; i < n; ++i) {
      const auto inc = sgd.increment();
      sM += inc.dM, qM += inc.dM.cwiseProduct(inc.dM);
      sD += inc.dR_drift, qD += inc.dR_drift.cwiseProduct(inc.dR_drift);
      sN += inc.dR_noise, qN += inc.dR_noise.cwiseProduct(inc.dR_noise);
      if (i % 256 == 255) progress.advance(256);
    }
    auto mean_se = [&](const Eigen::MatrixXd& sum, const Eigen::MatrixXd& sq) {
      const Eigen::MatrixXd m = sum / static_cast<double>(n);
      const Eigen::MatrixXd var = ((sq / static_cast<double>(n)) - m.cwiseProduct(m)).cwiseMax(0.0) * (n / (n - 1.0));
      return std::pair<Eigen::MatrixXd, Eigen::MatrixXd>{m, (var / static_cast<double>(n)).cwiseSqrt()};
    };
    const auto [mM, eM] = mean_se(sM, qM);
    const auto [mD, eD] = mean_se(sD, qD);
    const auto [mN, eN] = mean_se(sN, qN);
    const FlowTerms th = flow.terms(M, R, true);
    auto compare = [&](const std::string& term, const Eigen::MatrixXd& tv, const Eigen::MatrixXd& tse, const Eigen::MatrixXd& sv,
                       const Eigen::MatrixXd& sse, bool symmetric) {
      for (int i = 0; i < tv.rows(); ++i)
        for (int j = symmetric ? i : 0; j < tv.cols(); ++j) {
          const double se = std::sqrt(tse(i, j) * tse(i, j) + sse(i, j) * sse(i, j));
          const double z = (tv(i, j) - sv(i, j)) / std::max(se, 1e-300);
          const bool ok = std::fabs(z) <= tol;
          all_ok = all_ok && ok;
          worst = std::max(worst, std::fabs(z));
          rows.add_row(std::vector<Cell>{sgd.time(), term, fmt::format("{}_{}", i, j), tv(i, j), tse(i, j), sv(i, j), sse(i, j), z,
                                         ok ? 1.0 : 0.0});
        }
    };
    compare("dM", th.dM, th.dM_se, mM, eM, false);
    compare("dR_drift", th.dR_drift, th.dR_drift_se, mD, eD, true);
    compare("dR_noise", th.dR_noise, th.dR_noise_se, mN, eN, true);
    summary += fmt::format("  t = {:<6g} dM_0_0 {:+.4f} (theory) vs {:+.4f} ± {:.4f};  dR_noise_0_0 {:+.4f} vs {:+.4f} ± {:.4f}\n", sgd.time(),
                           th.dM(0, 0), mM(0, 0), eM(0, 0), th.dR_noise(0, 0), mN(0, 0), eN(0, 0));
    if (interrupted()) break;
  }
  progress.finish();
  RunOutput out;
  out.tables["drift.csv"] = rows;
  const bool ok = all_ok && !interrupted();
  nlohmann::json v = {{"mode", "drift"},
                      {"D", D},
                      {"samples", n},
                      {"verdict", ok ? "agree" : "disagree"},
                      {"criterion", fmt::format("|theory - mean of D x increments| <= {} combined standard errors, for every entry of "
                                                "dM, dR (eta-linear part) and dR (eta^2 part)",
                                                tol)},
                      {"max_abs_z", worst}};
  out.files["validate.json"] = v.dump(2) + "\n";
  out.info["validation"] = v;
  summary += fmt::format("  largest |z| = {:.2f} (allowed {}): {}\n", worst, tol, ok ? "drift AGREES term by term" : "drift DISAGREES");
  out.summary = summary;
  out.exit_code = interrupted() ? 130 : (ok ? 0 : 1);
  return out;
}

}  // namespace

RunOutput validate_command(const Params& p, RunContext& ctx) {
  return p.text("mode") == "drift" ? validate_drift(p, ctx) : validate_trajectory(p, ctx);
}

}  // namespace hdat::specialization
