#include "hdat/specialization/analyze.hpp"
#include "hdat/core/exit_code.hpp"

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

// First time the head difference along each feature exceeds `threshold` (NaN: never), over a run's
// observed states.
std::vector<double> feature_split_times(const Trajectory& run, int H, int F, double threshold) {
  std::vector<double> out(static_cast<std::size_t>(F), NAN);
  for (std::size_t r = 0; r < run.size(); ++r) {
    const auto M = run.layout().view(run.state(r), "M");
    for (int f = 0; f < F; ++f) {
      if (!std::isnan(out[static_cast<std::size_t>(f)])) continue;
      double mean = 0;
      for (int h = 0; h < H; ++h) mean += M(h, f) / H;
      double spread = 0;
      for (int h = 0; h < H; ++h) spread = std::max(spread, std::fabs(M(h, f) - mean));
      if (spread > threshold) out[static_cast<std::size_t>(f)] = run.t(r);
    }
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

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

nlohmann::json finite_or_null(std::vector<double> v) {
  nlohmann::json j = nlohmann::json::array();
  for (double x : v) j.push_back(num(x));
  return j;
}

// The unspecialized fixed point, its linearisation, the predicted order of the splits and the
// Monte Carlo spread of λ_max.
struct PlateauStability {
  SymmetricFixedPoint fixed_point;
  Linearisation linearisation;
  std::vector<int> predicted_order;
  double lambda_max = NAN, lambda_sd = NAN;
  std::vector<double> lambda_replicas;
  double escape_slope = NAN;  ///< t_esc ≈ t_0 + log D / (2 λ_max)
  double seconds_fixed_point = 0, seconds_linearisation = 0, seconds_rate_error = 0;
};

PlateauStability analyse_plateau(const OrderParameterFlow& flow, const Config& s, const Params& p) {
  PlateauStability a;
  PlateauOptions fo;
  fo.t_relax = p.real("t_relax");
  auto t0 = Clock::now();
  a.fixed_point = symmetric_fixed_point(flow, fo);
  a.seconds_fixed_point = since(t0);
  t0 = Clock::now();
  a.linearisation = linearise(flow, a.fixed_point.M, a.fixed_point.R, a.fixed_point.b);
  a.seconds_linearisation = since(t0);
  t0 = Clock::now();
  a.predicted_order = predicted_order(a.linearisation, s.F);
  a.lambda_max = a.linearisation.lambda_max;
  // Monte Carlo error of lambda_max: the leading head-difference rate on independent sample sets at
  // the same point (the fixed point itself moves by less than the rate's own spread).
  for (int k = 1; k <= 4; ++k) {
    FlowOptions fo2 = flow.options();
    fo2.replica = static_cast<std::uint64_t>(k);
    const OrderParameterFlow other(s, fo2);
    a.lambda_replicas.push_back(head_difference_rate(other, a.fixed_point.M, a.fixed_point.R, a.fixed_point.b));
  }
  double m = 0, v = 0;
  for (double x : a.lambda_replicas) m += x / a.lambda_replicas.size();
  for (double x : a.lambda_replicas) v += (x - m) * (x - m) / (a.lambda_replicas.size() - 1);
  a.lambda_sd = std::sqrt(v);  // the spread of one sample set's estimate (not the error of their mean)
  a.seconds_rate_error = since(t0);
  a.escape_slope = a.lambda_max > 0 ? 1.0 / (2.0 * a.lambda_max) : NAN;
  return a;
}

nlohmann::json plateau_json(const PlateauStability& a, const OrderParameterFlow& flow, const Config& s, Table& spectrum) {
  const SymmetricFixedPoint& fp = a.fixed_point;
  const Linearisation& lin = a.linearisation;
  const Coordinates c = Coordinates::of(s);
  nlohmann::json st;
  st["fixed_point"] = {{"M", matrix_json(fp.M)}, {"R", matrix_json(fp.R)}, {"solver", fp.solver_json()},
                       {"risk", flow.risk(fp.M, fp.R, fp.b).first}};
  st["fixed_point"]["b"] = std::vector<double>(fp.b.data(), fp.b.data() + fp.b.size());
  st["fixed_point"]["b_trained"] = s.train_bias;
  nlohmann::json eig = nlohmann::json::array(), unstable = nlohmann::json::array(), modes = nlohmann::json::array();
  double imag_max = 0;
  for (const auto& m : lin.modes) {
    eig.push_back(m.eigenvalue.real());
    modes.push_back(mode_json(m, c));
    spectrum.add_row(std::vector<Cell>{m.eigenvalue.real(), m.eigenvalue.imag(), m.kind, static_cast<double>(m.feature), m.feature_share,
                                       m.symmetric_share});
    if (m.eigenvalue.real() > 0) unstable.push_back({{"eigenvalue", m.eigenvalue.real()}, {"feature", m.feature}, {"kind", m.kind}});
    imag_max = std::max(imag_max, std::fabs(m.eigenvalue.imag()));
  }
  st["eigenvalues"] = eig;
  st["eigenvalues_imag_max"] = imag_max;
  st["modes"] = modes;
  st["unstable"] = unstable;
  st["jacobian_error_max"] = lin.jacobian_error.maxCoeff();
  st["jacobian"] = matrix_json(lin.jacobian);
  nlohmann::json hess = nlohmann::json::array();
  for (const auto& m : lin.hessian_modes) hess.push_back(mode_json(m, c));
  st["hessian_modes"] = hess;
  st["predicted_order"] = a.predicted_order;
  const Eigen::VectorXd var = s.prior.variance();
  st["prior_variance"] = std::vector<double>(var.data(), var.data() + var.size());
  st["lambda_max"] = num(a.lambda_max);
  st["lambda_max_sd"] = num(a.lambda_sd);
  st["lambda_max_replicas"] = a.lambda_replicas;
  st["escape_time_slope"] = num(a.escape_slope);
  st["escape_time_law"] = "t_esc(D) = t_0 + log(D) / (2 lambda_max): an O(1/sqrt D) asymmetry grows like exp(lambda_max t) from the "
                          "plateau and is visible once it reaches O(1); t_0 depends on the threshold and on the projection of the initial "
                          "asymmetry on the unstable mode, and is fitted (slope fixed) to the escape times of the D = infinity flow from "
                          "the D-dependent initial overlaps (theory) and, separately, of online SGD (which escapes earlier: its noise adds "
                          "asymmetry along the plateau)";
  return st;
}

std::string plateau_summary(const PlateauStability& a, const Config& s) {
  const SymmetricFixedPoint& fp = a.fixed_point;
  const Linearisation& lin = a.linearisation;
  std::string summary = fmt::format("stability of the unspecialized phase ({}, H={}, F={}, L={}, eta={})\n", activation_name(s.activation), s.H,
                                    s.F, s.L, s.eta);
  summary += "  fixed point       " + fp.summary.brief() + "\n";
  std::string mrow;
  for (int f = 0; f < s.F; ++f) mrow += fmt::format("{}{:.4f}", f ? ", " : "", fp.M(0, f));
  summary += fmt::format("  M* (every head)  [{}],  R_hh {:.4f}{}{}\n", mrow, fp.R(0, 0),
                         s.H > 1 ? fmt::format(",  R_hh' {:.4f}", fp.R(0, 1)) : std::string(),
                         s.train_bias ? fmt::format(",  b_h {:.4f} (trained)", fp.b(0)) : std::string());
  summary += "  leading modes    ";
  for (std::size_t k = 0; k < std::min<std::size_t>(lin.modes.size(), 4); ++k)
    summary += fmt::format("{:+.4f} ({}, f={})  ", lin.modes[k].eigenvalue.real(), lin.modes[k].kind, lin.modes[k].feature);
  summary += "\n";
  const Eigen::VectorXd var = s.prior.variance();
  summary += fmt::format("  predicted order  [{}] (prior variances [{:.3g}])\n", fmt::join(a.predicted_order, ", "),
                         fmt::join(std::vector<double>(var.data(), var.data() + var.size()), ", "));
  summary += fmt::format("  lambda_max       {:.4f} (sample-set spread {:.4f})\n", a.lambda_max, a.lambda_sd);
  summary += fmt::format("  escape slope     1/(2 lambda_max) = {:.3f} per unit log D\n", a.escape_slope);
  summary += fmt::format("  time             fixed point {:.2f} s, Jacobian + Hessian + eigendecomposition {:.2f} s, error of lambda_max {:.2f} s\n",
                         a.seconds_fixed_point, a.seconds_linearisation, a.seconds_rate_error);
  return summary;
}

// The escape from the plateau against log D: the D = ∞ flow from each D's initial overlaps, and
// (compare=true) online SGD at each D, with the order in which the features split.
struct EscapeScan {
  std::vector<long> dims;
  std::vector<double> log_D, theory, simulation_mean, simulation_se;
  std::vector<int> seeds_escaped;
  nlohmann::json measured_orders = nlohmann::json::array();
  std::map<std::string, int> order_counts;
};

EscapeScan scan_escape_times(const Params& p, const OrderParameterFlow& flow, const Config& s, double threshold, RunContext& ctx) {
  EscapeScan e;
  e.dims = p.int_vector("dims");
  const std::vector<double> times = observation_times(p);
  for (long D : e.dims) {
    Params pd = p.with({{"D", D}});
    Config sd = Config::from(pd);
    Eigen::MatrixXd M0, R0;
    initial_overlaps(pd, sd, M0, R0);
    IntegrateOptions located = integrate_options(p, flow.layout());
    located.events = specialization_events(s.H, s.F, threshold);
    const FlowRun tr = integrate_flow(flow, M0, R0, times, located);
    e.theory.push_back(located_events(tr.solver, flow).plateau_end);
    e.log_D.push_back(std::log(static_cast<double>(D)));
    double m = NAN, se = NAN;
    int escaped = 0;
    if (p.boolean("compare")) {
      // Escape times need no precise risk: a smaller test set.
      const Params pe = p.with({{"test_size", std::min<long>(p.integer("test_size"), 2000)}});
      const Ensemble ens = run_ensemble(Bound(*dynamics_model(), pe), static_cast<double>(D), ctx);
      std::vector<double> escapes;
      for (std::size_t k = 0; k < ens.runs.size(); ++k) {
        if (std::isfinite(ens.escape_times[k])) escapes.push_back(ens.escape_times[k]);
        const std::vector<int> mo = order_from_times(feature_split_times(ens.runs[k], s.H, s.F, threshold));
        e.measured_orders.push_back({{"D", D}, {"seed", s.seed}, {"replica", k}, {"order", mo}});
        if (!mo.empty()) e.order_counts[fmt::format("{}", fmt::join(mo, ","))] += 1;
      }
      escaped = static_cast<int>(escapes.size());
      if (escaped) {
        const stats::MeanSe es = stats::mean_se(escapes);
        m = es.mean;
        se = escaped > 1 ? es.se : NAN;
      }
    }
    e.simulation_mean.push_back(m);
    e.simulation_se.push_back(se);
    e.seeds_escaped.push_back(escaped);
    if (interrupted()) break;  // every column of this D is complete: the finished Ds are written
  }
  return e;
}

// The escape times against the two predictions: the slope 1/(2 λ_max) with a fitted intercept, and
// the growth along the plateau Λ(t_esc) = c + ½ log D with one fitted constant c. Writes escape.csv,
// growth.csv and the block of stability.json.
void escape_outputs(const EscapeScan& e, const OrderParameterFlow& flow, const Params& p, double slope, RunOutput& out,
                    nlohmann::json& st, std::string& summary) {
  const std::vector<double>& logD = e.log_D;
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
  const double t0_th = intercept(e.theory), t0_sim = intercept(e.simulation_mean);
  const GrowthAlongPlateau growth = growth_along_plateau(flow, observation_times(p).back(), 60);
  std::vector<double> Dv;
  for (double l : logD) Dv.push_back(std::exp(l));
  const double c_th = growth.fit_constant(Dv, e.theory), c_sim = growth.fit_constant(Dv, e.simulation_mean);
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
  Table esc({"D", "log_D", "theory_escape", "sim_escape_mean", "sim_escape_se", "seeds_escaped", "asymptotic_theory", "asymptotic_sim",
             "along_plateau_theory", "along_plateau_sim"});
  for (std::size_t i = 0; i < e.theory.size(); ++i)
    esc.add_row({Dv[i], logD[i], e.theory[i], e.simulation_mean[i], e.simulation_se[i], static_cast<double>(e.seeds_escaped[i]),
                 t0_th + slope * logD[i], t0_sim + slope * logD[i], growth.escape_time(Dv[i], c_th), growth.escape_time(Dv[i], c_sim)});
  out.tables["escape.csv"] = esc;
  Table g({"t", "lambda", "Lambda"});
  for (std::size_t i = 0; i < growth.t.size(); ++i) g.add_row({growth.t[i], growth.lambda[i], growth.Lambda[i]});
  out.tables["growth.csv"] = g;
  st["escape_times"] = {{"D", e.dims},
                        {"theory", finite_or_null(e.theory)},
                        {"simulation_mean", finite_or_null(e.simulation_mean)},
                        {"simulation_se", finite_or_null(e.simulation_se)},
                        {"theory_slope_fit", num(free_slope(e.theory))},
                        {"simulation_slope_fit", num(free_slope(e.simulation_mean))},
                        {"predicted_slope", num(slope)},
                        {"t0_theory", num(t0_th)},
                        {"t0_simulation", num(t0_sim)},
                        {"along_plateau_constant_theory", num(c_th)},
                        {"along_plateau_constant_simulation", num(c_sim)},
                        {"local_slope_theory", finite_or_null(local_slope(e.theory))},
                        {"local_slope_simulation", finite_or_null(local_slope(e.simulation_mean))}};
  st["measured_orders"] = e.measured_orders;
  st["measured_order_counts"] = e.order_counts;
  summary += fmt::format("  escape vs log D  slope: predicted {:.3f}, theory flow {:.3f}, online SGD {:.3f}\n", slope, free_slope(e.theory),
                         free_slope(e.simulation_mean));
  if (!e.order_counts.empty()) {
    summary += "  measured orders  ";
    for (const auto& [k, v] : e.order_counts) summary += fmt::format("[{}] x{}  ", k, v);
    summary += "\n";
  }
}

// Later stages: plateaus of the theory trajectory after the first split (local minima of |dx/dt|),
// each polished to a fixed point with specialised heads and linearised.
nlohmann::json later_stages(const Params& p, const OrderParameterFlow& flow, const Config& s, double threshold, std::string& summary) {
  nlohmann::json stages = nlohmann::json::array();
  Params pd = p.with({{"D", p.int_vector("dims").back()}});
  Eigen::MatrixXd M0, R0;
  initial_overlaps(pd, Config::from(pd), M0, R0);
  const std::vector<double> fine = lin_spaced(0.0, observation_times(p).back(), 400);
  IntegrateOptions located = integrate_options(p, flow.layout());
  located.events = specialization_events(s.H, s.F, threshold);
  const FlowRun tr = integrate_flow(flow, M0, R0, fine, located);
  const double t_split = located_events(tr.solver, flow).plateau_end;
  std::vector<double> speed;
  const StateLayout layout = flow.layout();
  auto row_state = [&](std::size_t r, Eigen::MatrixXd& M, Eigen::MatrixXd& R, Eigen::VectorXd& b) {
    const Eigen::VectorXd& x = tr.trajectory.state(r);
    M = layout.view(x, "M");
    R = layout.view(x, "R");
    b = s.bias_in(x);
  };
  for (std::size_t r = 0; r < tr.trajectory.size(); ++r) {
    Eigen::MatrixXd M, R;
    Eigen::VectorXd b;
    row_state(r, M, R, b);
    const FlowTerms t = flow.terms(M, R, b, false);
    speed.push_back(std::sqrt(t.dM.squaredNorm() + (t.dR_drift + t.dR_noise).squaredNorm() + t.db.squaredNorm()));
  }
  for (std::size_t r = 1; r + 1 < speed.size() && std::isfinite(t_split); ++r) {
    if (tr.trajectory.t(r) <= t_split * 1.2) continue;
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
    std::vector<double> eigenvalues;
    for (const auto& m : sl.modes) {
      eigenvalues.push_back(m.eigenvalue.real());
      if (m.eigenvalue.real() > 0) um.push_back({{"eigenvalue", m.eigenvalue.real()}, {"feature", m.feature}, {"kind", m.kind}});
    }
    stages.push_back({{"t_plateau", tr.trajectory.t(r)},
                      {"speed_at_plateau", speed[r]},
                      {"fixed_point", {{"M", matrix_json(sp.M)}, {"R", matrix_json(sp.R)}, {"solver", sp.solver_json()}}},
                      {"eigenvalues", eigenvalues},
                      {"unstable", um},
                      {"risk", flow.risk(sp.M, sp.R, sp.b).first}});
    summary += fmt::format("  later plateau    t = {:.3g}: {}; {} unstable mode(s){}\n", tr.trajectory.t(r), "specialised fixed point",
                           um.size(), um.empty() ? " (stable: the last stage)" : fmt::format(", largest {:+.4f}", um[0]["eigenvalue"].get<double>()));
    if (stages.size() >= 4) break;
  }
  return stages;
}

}  // namespace

// The stability analysis of the unspecialized phase: compute (plateau, escape scan, later stages),
// then write stability.json, spectrum.csv, escape.csv, growth.csv and the summary.
RunOutput analyze_command(const Params& p, RunContext& ctx) {
  if (p.text("analysis") == "activations") return compare_activations(p, ctx);
  const Config s = Config::from(p);
  if (s.bias.size() && (s.bias.array() != s.bias(0)).any())
    throw InputError("bias", "the stability analysis of the unspecialized phase needs exchangeable heads: give every head the same bias");
  const OrderParameterFlow flow(s, flow_options(p, ctx.threads));
  const double threshold = p.real("split_threshold");
  const PlateauStability plateau = analyse_plateau(flow, s, p);

  RunOutput out;
  Table spectrum({"re", "im", "kind", "feature", "feature_share", "symmetric_share"});
  nlohmann::json st = plateau_json(plateau, flow, s, spectrum);
  std::string summary = plateau_summary(plateau, s);
  const auto t0 = Clock::now();
  const EscapeScan scan = scan_escape_times(p, flow, s, threshold, ctx);
  escape_outputs(scan, flow, p, plateau.escape_slope, out, st, summary);
  st["stages"] = p.boolean("stages") && s.H > 1 ? later_stages(p, flow, s, threshold, summary) : nlohmann::json::array();
  st["timing_seconds"] = {{"fixed_point", plateau.seconds_fixed_point},
                          {"linearisation", plateau.seconds_linearisation},
                          {"lambda_max_error", plateau.seconds_rate_error},
                          {"escape_times_and_stages", since(t0)}};
  out.files["stability.json"] = st.dump(2) + "\n";
  out.tables["spectrum.csv"] = spectrum;
  out.info["stability"] = {{"lambda_max", num(plateau.lambda_max)}, {"escape_time_slope", num(plateau.escape_slope)},
                           {"predicted_order", plateau.predicted_order}, {"fixed_point_converged", plateau.fixed_point.summary.converged}};
  out.summary = summary;
  out.exit_code = code(interrupted() ? ExitCode::interrupted : plateau.fixed_point.summary.converged ? ExitCode::ok : ExitCode::numerical_failure);
  return out;
}

}  // namespace hdat::specialization
