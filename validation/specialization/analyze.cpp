#include "hdat/specialization/analyze.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>

#include "hdat/core/progress.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/stability.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/statistics.hpp"
#include "hdat/specialization/declaration.hpp"

namespace hdat::specialization {

namespace {

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json matrix_json(const Eigen::MatrixXd& A) {
  nlohmann::json j = nlohmann::json::array();
  for (int i = 0; i < A.rows(); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int k = 0; k < A.cols(); ++k) row.push_back(A(i, k));
    j.push_back(row);
  }
  return j;
}

nlohmann::json mode_json(const Mode& m, const Coordinates& c) {
  nlohmann::json v = nlohmann::json::object();
  for (int k = 0; k < m.vector.size(); ++k) v[c.name(k)] = m.vector(k);
  return {{"eigenvalue", m.eigenvalue.real()}, {"eigenvalue_imag", m.eigenvalue.imag()}, {"kind", m.kind},
          {"feature", m.feature},              {"feature_share", m.feature_share},       {"symmetric_share", m.symmetric_share},
          {"vector", v}};
}

// First time the head difference along each feature exceeds `threshold` (NaN: never), from a table
// with columns t, M_h_f.
std::vector<double> feature_split_times(const Table& t, int H, int F, double threshold) {
  std::vector<double> out(static_cast<std::size_t>(F), NAN);
  for (std::size_t r = 0; r < t.rows(); ++r)
    for (int f = 0; f < F; ++f) {
      if (!std::isnan(out[static_cast<std::size_t>(f)])) continue;
      double mean = 0;
      for (int h = 0; h < H; ++h) mean += t.number(r, fmt::format("M_{}_{}", h, f)) / H;
      double spread = 0;
      for (int h = 0; h < H; ++h) spread = std::max(spread, std::fabs(t.number(r, fmt::format("M_{}_{}", h, f)) - mean));
      if (spread > threshold) out[static_cast<std::size_t>(f)] = t.number(r, "t");
    }
  return out;
}

std::vector<int> order_from_times(const std::vector<double>& times) {
  std::vector<int> order;
  for (std::size_t f = 0; f < times.size(); ++f)
    if (std::isfinite(times[f])) order.push_back(static_cast<int>(f));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return times[static_cast<std::size_t>(a)] < times[static_cast<std::size_t>(b)]; });
  return order;
}

}  // namespace

RunOutput analyze_command(const Params& p, RunContext& ctx) {
  if (p.text("analysis") == "activations") return compare_activations(p, ctx);
  const Setup s = setup_from(p);
  if (s.bias.size() && (s.bias.array() != s.bias(0)).any())
    throw InputError("bias", "the stability analysis of the unspecialized phase needs exchangeable heads: give every head the same bias");
  const OrderParameterFlow flow(s, flow_options(p, ctx.threads));
  const Coordinates c = Coordinates::of(s);
  PlateauOptions fo;
  fo.t_relax = p.real("t_relax");
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto t0 = Clock::now();
  const SymmetricFixedPoint fp = symmetric_fixed_point(flow, fo);
  const double sec_fixed_point = since(t0);
  t0 = Clock::now();
  const Linearisation lin = linearise(flow, fp.M, fp.R, fp.b);
  const double sec_linearise = since(t0);
  t0 = Clock::now();
  const std::vector<int> order = predicted_order(lin, s.F);
  const double lam = lin.lambda_max;
  // Monte Carlo error of lambda_max: the leading head-difference rate on independent sample sets at
  // the same point (the fixed point itself moves by less than the rate's own spread).
  std::vector<double> lam_reps;
  for (int k = 1; k <= 4; ++k) {
    FlowOptions fo2 = flow.options();
    fo2.replica = static_cast<std::uint64_t>(k);
    const OrderParameterFlow other(s, fo2);
    lam_reps.push_back(head_difference_rate(other, fp.M, fp.R, fp.b));
  }
  double lam_se = NAN;
  {
    double m = 0, v = 0;
    for (double x : lam_reps) m += x / lam_reps.size();
    for (double x : lam_reps) v += (x - m) * (x - m) / (lam_reps.size() - 1);
    lam_se = std::sqrt(v);  // the spread of one sample set's estimate
  }
  const double sec_rate_error = since(t0);
  const double slope = lam > 0 ? 1.0 / (2.0 * lam) : NAN;
  const double threshold = p.real("split_threshold");

  RunOutput out;
  nlohmann::json st;
  st["fixed_point"] = {{"M", matrix_json(fp.M)}, {"R", matrix_json(fp.R)}, {"solver", fp.solver_json()},
                       {"risk", flow.risk(fp.M, fp.R, fp.b).first}};
  st["fixed_point"]["b"] = std::vector<double>(fp.b.data(), fp.b.data() + fp.b.size());
  st["fixed_point"]["b_trained"] = s.train_bias;
  nlohmann::json eig = nlohmann::json::array(), unstable = nlohmann::json::array(), modes = nlohmann::json::array();
  Table spectrum({"re", "im", "kind", "feature", "feature_share", "symmetric_share"});
  for (const auto& m : lin.modes) {
    eig.push_back(m.eigenvalue.real());
    modes.push_back(mode_json(m, c));
    spectrum.add_row(std::vector<Cell>{m.eigenvalue.real(), m.eigenvalue.imag(), m.kind, static_cast<double>(m.feature), m.feature_share,
                                       m.symmetric_share});
    if (m.eigenvalue.real() > 0) unstable.push_back({{"eigenvalue", m.eigenvalue.real()}, {"feature", m.feature}, {"kind", m.kind}});
  }
  st["eigenvalues"] = eig;
  st["eigenvalues_imag_max"] = [&] {
    double mx = 0;
    for (const auto& m : lin.modes) mx = std::max(mx, std::fabs(m.eigenvalue.imag()));
    return mx;
  }();
  st["modes"] = modes;
  st["unstable"] = unstable;
  st["jacobian_error_max"] = lin.jacobian_error.maxCoeff();
  st["jacobian"] = matrix_json(lin.jacobian);
  nlohmann::json hess = nlohmann::json::array();
  for (const auto& m : lin.hessian_modes) hess.push_back(mode_json(m, c));
  st["hessian_modes"] = hess;
  st["predicted_order"] = order;
  const Eigen::VectorXd var = s.prior.variance();
  st["prior_variance"] = std::vector<double>(var.data(), var.data() + var.size());
  st["lambda_max"] = num(lam);
  st["lambda_max_sd"] = num(lam_se);
  st["lambda_max_replicas"] = lam_reps;
  st["escape_time_slope"] = num(slope);
  st["escape_time_law"] = "t_esc(D) = t_0 + log(D) / (2 lambda_max): an O(1/sqrt D) asymmetry grows like exp(lambda_max t) from the "
                          "plateau and is visible once it reaches O(1); t_0 depends on the threshold and on the projection of the initial "
                          "asymmetry on the unstable mode, and is fitted (slope fixed) to the escape times of the D = infinity flow from "
                          "the D-dependent initial overlaps (theory) and, separately, of online SGD (which escapes earlier: its noise adds "
                          "asymmetry along the plateau)";

  std::string summary = fmt::format("stability of the unspecialized phase ({}, H={}, F={}, L={}, eta={})\n", activation_name(s.activation), s.H,
                                    s.F, s.L, s.eta);
  summary += "  fixed point       " + fp.summary.brief() + "\n";
  {
    std::string mrow;
    for (int f = 0; f < s.F; ++f) mrow += fmt::format("{}{:.4f}", f ? ", " : "", fp.M(0, f));
    summary += fmt::format("  M* (every head)  [{}],  R_hh {:.4f}{}{}\n", mrow, fp.R(0, 0),
                           s.H > 1 ? fmt::format(",  R_hh' {:.4f}", fp.R(0, 1)) : std::string(),
                           s.train_bias ? fmt::format(",  b_h {:.4f} (trained)", fp.b(0)) : std::string());
  }
  summary += "  leading modes    ";
  for (std::size_t k = 0; k < std::min<std::size_t>(lin.modes.size(), 4); ++k)
    summary += fmt::format("{:+.4f} ({}, f={})  ", lin.modes[k].eigenvalue.real(), lin.modes[k].kind, lin.modes[k].feature);
  summary += "\n";
  summary += fmt::format("  predicted order  [{}] (prior variances [{:.3g}])\n", fmt::join(order, ", "), fmt::join(st["prior_variance"].get<std::vector<double>>(), ", "));
  summary += fmt::format("  lambda_max       {:.4f} (sample-set spread {:.4f})\n", lam, lam_se);
  summary += fmt::format("  escape slope     1/(2 lambda_max) = {:.3f} per unit log D\n", slope);

  summary += fmt::format("  time             fixed point {:.2f} s, Jacobian + Hessian + eigendecomposition {:.2f} s, error of lambda_max {:.2f} s\n",
                         sec_fixed_point, sec_linearise, sec_rate_error);
  t0 = Clock::now();

  // Escape times against log D: theory from each D's initial asymmetry, and (compare=true) online SGD.
  const std::vector<long> dims = p.int_vector("dims");
  const std::vector<double> times = observation_times(p);
  Table esc({"D", "log_D", "theory_escape", "sim_escape_mean", "sim_escape_se", "seeds_escaped", "asymptotic_theory", "asymptotic_sim",
             "along_plateau_theory", "along_plateau_sim"});
  std::vector<double> th_esc, sim_mean, sim_se, logD;
  std::vector<int> escaped_counts;
  nlohmann::json measured_orders = nlohmann::json::array();
  std::map<std::string, int> order_counts;
  for (long D : dims) {
    Params pd = p.with({{"D", D}});
    Setup sd = setup_from(pd);
    Eigen::MatrixXd M0, R0;
    initial_overlaps(pd, sd, M0, R0);
    const Trajectory tr = integrate_flow(flow, M0, R0, times, integrate_options(p, flow.layout()));
    th_esc.push_back(detect_events(tr.table, s.H, s.F, threshold).plateau_end);
    logD.push_back(std::log(static_cast<double>(D)));
    double m = NAN, se = NAN;
    int escaped = 0;
    if (p.boolean("compare")) {
      // Escape times need no precise risk: a smaller test set.
      const Params pe = p.with({{"test_size", std::min<long>(p.integer("test_size"), 2000)}});
      const auto model = dynamics_model();
      const Ensemble ens = run_ensemble(*model, pe, model->settings(pe), static_cast<double>(D), ctx);
      std::vector<double> escapes;
      for (std::size_t k = 0; k < ens.runs.size(); ++k) {
        if (std::isfinite(ens.escape_times[k])) escapes.push_back(ens.escape_times[k]);
        const std::vector<int> mo = order_from_times(feature_split_times(ens.runs[k], s.H, s.F, threshold));
        measured_orders.push_back({{"D", D}, {"seed", s.seed}, {"replica", k}, {"order", mo}});
        if (!mo.empty()) order_counts[fmt::format("{}", fmt::join(mo, ","))] += 1;
      }
      escaped = static_cast<int>(escapes.size());
      if (escaped) {
        const stats::MeanSe es = stats::mean_se(escapes);
        m = es.mean;
        se = escaped > 1 ? es.se : NAN;
      }
      if (interrupted()) break;
    }
    sim_mean.push_back(m);
    sim_se.push_back(se);
    escaped_counts.push_back(escaped);
  }
  // Intercepts with the slope fixed to the prediction; and free least-squares slopes for comparison.
  auto intercept = [&](const std::vector<double>& y) {
    double acc = 0;
    int n = 0;
    for (std::size_t i = 0; i < y.size(); ++i)
      if (std::isfinite(y[i])) acc += y[i] - slope * logD[i], ++n;
    return n ? acc / n : std::nan("");
  };
  auto free_slope = [&](const std::vector<double>& y) {
    std::vector<double> xs, ys;
    for (std::size_t i = 0; i < y.size(); ++i)
      if (std::isfinite(y[i])) xs.push_back(logD[i]), ys.push_back(y[i]);
    return stats::linear_slope(xs, ys);
  };
  const double t0_th = intercept(th_esc), t0_sim = intercept(sim_mean);
  // The refined prediction: Λ(t_esc) = c + ½ log D, one constant c fitted to each set of escape times.
  const GrowthAlongPlateau growth = growth_along_plateau(flow, times.back(), 60);
  std::vector<double> Dv;
  for (double l : logD) Dv.push_back(std::exp(l));
  const double c_th = growth.fit_constant(Dv, th_esc), c_sim = growth.fit_constant(Dv, sim_mean);
  auto anchored = [&](const std::vector<double>& y, std::size_t i) {
    return growth.escape_time(Dv[i], &y == &th_esc ? c_th : c_sim);
  };
  // Predicted local slope dt_esc/dlog D = 1/(2 λ(t_esc)) at the measured escape times.
  auto local_slope = [&](const std::vector<double>& y) {
    std::vector<double> slopes;
    for (double t : y) {
      double lam_t = std::nan("");
      for (std::size_t k = 1; k < growth.t.size(); ++k)
        if (growth.t[k - 1] <= t && t <= growth.t[k]) lam_t = growth.lambda[k - 1] + (growth.lambda[k] - growth.lambda[k - 1]) * (t - growth.t[k - 1]) / (growth.t[k] - growth.t[k - 1]);
      slopes.push_back(lam_t > 0 ? 0.5 / lam_t : std::nan(""));
    }
    return slopes;
  };
  for (std::size_t i = 0; i < th_esc.size(); ++i)
    esc.add_row({std::exp(logD[i]), logD[i], th_esc[i], sim_mean[i], sim_se[i], static_cast<double>(escaped_counts[i]),
                 t0_th + slope * logD[i], t0_sim + slope * logD[i], anchored(th_esc, i), anchored(sim_mean, i)});
  {
    Table g({"t", "lambda", "Lambda"});
    for (std::size_t i = 0; i < growth.t.size(); ++i) g.add_row({growth.t[i], growth.lambda[i], growth.Lambda[i]});
    out.tables["growth.csv"] = g;
  }
  st["escape_times"] = {{"D", dims},
                        {"theory", th_esc},
                        {"simulation_mean", sim_mean},
                        {"simulation_se", sim_se},
                        {"theory_slope_fit", num(free_slope(th_esc))},
                        {"simulation_slope_fit", num(free_slope(sim_mean))},
                        {"predicted_slope", num(slope)},
                        {"t0_theory", num(t0_th)},
                        {"t0_simulation", num(t0_sim)},
                        {"along_plateau_constant_theory", num(c_th)},
                        {"along_plateau_constant_simulation", num(c_sim)},
                        {"local_slope_theory", local_slope(th_esc)},
                        {"local_slope_simulation", local_slope(sim_mean)}};
  for (const char* k : {"local_slope_theory", "local_slope_simulation"})
    for (auto& x : st["escape_times"][k]) if (x.is_number() && !std::isfinite(x.get<double>())) x = nullptr;
  for (auto& x : st["escape_times"]["theory"]) if (x.is_number() && !std::isfinite(x.get<double>())) x = nullptr;
  for (auto& x : st["escape_times"]["simulation_mean"]) if (x.is_number() && !std::isfinite(x.get<double>())) x = nullptr;
  for (auto& x : st["escape_times"]["simulation_se"]) if (x.is_number() && !std::isfinite(x.get<double>())) x = nullptr;
  st["measured_orders"] = measured_orders;
  st["measured_order_counts"] = order_counts;
  summary += fmt::format("  escape vs log D  slope: predicted {:.3f}, theory flow {:.3f}, online SGD {:.3f}\n", slope, free_slope(th_esc),
                         free_slope(sim_mean));
  if (!order_counts.empty()) {
    summary += "  measured orders  ";
    for (const auto& [k, v] : order_counts) summary += fmt::format("[{}] x{}  ", k, v);
    summary += "\n";
  }

  // Later stages: plateaus of the theory trajectory after the first split (local minima of |dx/dt|).
  nlohmann::json stages = nlohmann::json::array();
  if (p.boolean("stages") && s.H > 1) {
    Params pd = p.with({{"D", dims.back()}});
    Eigen::MatrixXd M0, R0;
    initial_overlaps(pd, setup_from(pd), M0, R0);
    const std::vector<double> fine = lin_spaced(0.0, times.back(), 400);
    const Trajectory tr = integrate_flow(flow, M0, R0, fine, integrate_options(p, flow.layout()));
    const double t_split = detect_events(tr.table, s.H, s.F, threshold).plateau_end;
    std::vector<double> speed;
    const StateLayout layout = flow.layout();
    auto row_state = [&](std::size_t r, Eigen::MatrixXd& M, Eigen::MatrixXd& R, Eigen::VectorXd& b) {
      const Eigen::VectorXd x = state_at(tr.table, r, layout);
      M = layout.view(x, "M");
      R = layout.view(x, "R");
      b = s.bias_in(x);
    };
    for (std::size_t r = 0; r < tr.table.rows(); ++r) {
      Eigen::MatrixXd M, R;
      Eigen::VectorXd b;
      row_state(r, M, R, b);
      const FlowTerms t = flow.terms(M, R, b, false);
      speed.push_back(std::sqrt(t.dM.squaredNorm() + (t.dR_drift + t.dR_noise).squaredNorm() + t.db.squaredNorm()));
    }
    for (std::size_t r = 1; r + 1 < speed.size() && std::isfinite(t_split); ++r) {
      if (tr.table.number(r, "t") <= t_split * 1.2) continue;
      if (!(speed[r] < speed[r - 1] && speed[r] <= speed[r + 1])) continue;
      Eigen::MatrixXd M, R;
      Eigen::VectorXd b;
      row_state(r, M, R, b);
      PlateauOptions po;
      po.solver.max_iterations = 30;
      po.solver.tolerance = 1e-9;
      const SymmetricFixedPoint sp = polish_fixed_point(flow, M, R, b, po);
      // A later stage is a fixed point with specialised heads (not the unspecialized one again).
      const Eigen::RowVectorXd mean_row = sp.M.colwise().mean();
      double spread = 0;
      for (int h = 0; h < s.H; ++h) spread = std::max(spread, (sp.M.row(h) - mean_row).norm());
      if (!sp.summary.converged || spread < threshold) continue;
      bool seen = false;
      for (const auto& old : stages)
        seen = seen || (Eigen::Map<const Eigen::VectorXd>(old["fixed_point"]["M"].get<std::vector<std::vector<double>>>()[0].data(), s.F) -
                        sp.M.row(0).transpose()).norm() < 1e-3;
      if (seen) continue;
      const Linearisation sl = linearise(flow, sp.M, sp.R, sp.b);
      nlohmann::json um = nlohmann::json::array();
      for (const auto& m : sl.modes)
        if (m.eigenvalue.real() > 0) um.push_back({{"eigenvalue", m.eigenvalue.real()}, {"feature", m.feature}, {"kind", m.kind}});
      stages.push_back({{"t_plateau", tr.table.number(r, "t")},
                        {"speed_at_plateau", speed[r]},
                        {"fixed_point", {{"M", matrix_json(sp.M)}, {"R", matrix_json(sp.R)}, {"solver", sp.solver_json()}}},
                        {"eigenvalues", [&] {
                           std::vector<double> e;
                           for (const auto& m : sl.modes) e.push_back(m.eigenvalue.real());
                           return e;
                         }()},
                        {"unstable", um},
                        {"risk", flow.risk(sp.M, sp.R, sp.b).first}});
      summary += fmt::format("  later plateau    t = {:.3g}: {}; {} unstable mode(s){}\n", tr.table.number(r, "t"), "specialised fixed point",
                             um.size(), um.empty() ? " (stable: the last stage)" : fmt::format(", largest {:+.4f}", um[0]["eigenvalue"].get<double>()));
      if (stages.size() >= 4) break;
    }
  }
  st["stages"] = stages;
  st["timing_seconds"] = {{"fixed_point", sec_fixed_point},
                          {"linearisation", sec_linearise},
                          {"lambda_max_error", sec_rate_error},
                          {"escape_times_and_stages", since(t0)}};
  out.files["stability.json"] = st.dump(2) + "\n";
  out.tables["spectrum.csv"] = spectrum;
  out.tables["escape.csv"] = esc;
  out.info["stability"] = {{"lambda_max", num(lam)}, {"escape_time_slope", num(slope)}, {"predicted_order", order},
                           {"fixed_point_converged", fp.summary.converged}};
  out.summary = summary;
  out.exit_code = interrupted() ? 130 : (fp.summary.converged ? 0 : 3);
  return out;
}

}  // namespace hdat::specialization
