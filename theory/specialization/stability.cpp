#include "hdat/specialization/stability.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "hdat/specialization/curve.hpp"

namespace hdat::specialization {

Eigen::VectorXd Coordinates::pack(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) const {
  Eigen::VectorXd x(size());
  int k = 0;
  for (int h = 0; h < H; ++h)
    for (int f = 0; f < F; ++f) x(k++) = M(h, f);
  for (int h = 0; h < H; ++h)
    for (int j = h; j < H; ++j) x(k++) = R(h, j);
  if (bias) {
    if (b.size() != H) throw std::logic_error("Coordinates::pack: the biases are coordinates, pass them");
    for (int h = 0; h < H; ++h) x(k++) = b(h);
  }
  return x;
}

void Coordinates::unpack(const Eigen::VectorXd& x, Eigen::MatrixXd& M, Eigen::MatrixXd& R) const {
  M.resize(H, F);
  R.resize(H, H);
  int k = 0;
  for (int h = 0; h < H; ++h)
    for (int f = 0; f < F; ++f) M(h, f) = x(k++);
  for (int h = 0; h < H; ++h)
    for (int j = h; j < H; ++j) R(h, j) = R(j, h) = x(k++);
}

void Coordinates::unpack(const Eigen::VectorXd& x, Eigen::MatrixXd& M, Eigen::MatrixXd& R, Eigen::VectorXd& b,
                         const Eigen::VectorXd& fixed) const {
  unpack(x, M, R);
  b = bias ? Eigen::VectorXd(x.tail(H)) : fixed;
}

std::string Coordinates::name(int k) const {
  if (k < H * F) return fmt::format("M_{}_{}", k / F, k % F);
  k -= H * F;
  for (int h = 0; h < H; ++h)
    for (int j = h; j < H; ++j)
      if (k-- == 0) return fmt::format("R_{}_{}", h, j);
  if (bias && k < H) return fmt::format("b_{}", k);
  return "?";
}

nlohmann::json SymmetricFixedPoint::solver_json() const {
  nlohmann::json j = summary.to_json();
  j["relax_time"] = relax_time;
  return j;
}

namespace {

using Clock = std::chrono::steady_clock;

Eigen::VectorXd rhs(const OrderParameterFlow& flow, const Coordinates& c, const Eigen::VectorXd& x, long* calls) {
  Eigen::MatrixXd M, R;
  Eigen::VectorXd b;
  c.unpack(x, M, R, b, flow.setup().bias);
  const FlowTerms t = flow.terms(M, R, b, false);
  if (calls) ++*calls;
  return c.pack(t.dM, t.dR_drift + t.dR_noise, t.db);
}

// The symmetric manifold in reduced coordinates y = (m_1..m_F, r_d[, r_o][, β]). β, the common bias,
// is a coordinate when the bias is trained and acts as a common shift (softmax1); for bayes a common
// shift cancels in the joint normalisation, so β keeps its start (`beta0`) and is no coordinate.
struct Symmetric {
  int H, F;
  bool beta;
  double beta0;
  static Symmetric of(const Config& s) {
    return {s.H, s.F, s.train_bias && s.activation == Activation::softmax1, s.bias.size() ? s.bias.mean() : 0.0};
  }
  int r_size() const { return H > 1 ? 2 : 1; }
  int size() const { return F + r_size() + (beta ? 1 : 0); }
  void to_state(const Eigen::VectorXd& y, Eigen::MatrixXd& M, Eigen::MatrixXd& R, Eigen::VectorXd& b) const {
    M = y.head(F).transpose().replicate(H, 1);
    const double rd = y(F), ro = H > 1 ? y(F + 1) : 0.0;
    R = Eigen::MatrixXd::Constant(H, H, ro);
    R.diagonal().setConstant(rd);
    b = Eigen::VectorXd::Constant(H, beta ? y(F + r_size()) : beta0);
  }
  Eigen::VectorXd from_state(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) const {
    Eigen::VectorXd y(size());
    y.head(F) = M.colwise().mean().transpose();
    y(F) = R.diagonal().mean();
    if (H > 1) y(F + 1) = (R.sum() - R.diagonal().sum()) / (H * (H - 1.0));
    if (beta) y(F + r_size()) = b.mean();
    return y;
  }
  Eigen::VectorXd rhs(const OrderParameterFlow& flow, const Eigen::VectorXd& y, long* calls) const {
    Eigen::MatrixXd M, R;
    Eigen::VectorXd b;
    to_state(y, M, R, b);
    const FlowTerms t = flow.terms(M, R, b, false);
    if (calls) ++*calls;
    Eigen::VectorXd f(size());
    f.head(F) = t.dM.row(0).transpose();
    f(F) = t.dR_drift(0, 0) + t.dR_noise(0, 0);
    if (H > 1) f(F + 1) = t.dR_drift(0, 1) + t.dR_noise(0, 1);
    if (beta) f(F + r_size()) = t.db(0);
    return f;
  }
};

Mode classify(const Coordinates& c, std::complex<double> ev, const Eigen::VectorXd& v_in) {
  Mode m;
  m.eigenvalue = ev;
  m.vector = v_in / std::max(v_in.norm(), 1e-300);
  Eigen::MatrixXd dM, dR;
  Eigen::VectorXd db;
  c.unpack(m.vector, dM, dR, db, Eigen::VectorXd());
  // Projection on the symmetric (head-exchangeable) subspace: mean row of δM, mean diagonal and mean
  // off-diagonal of δR, mean of δb. The group acts by permuting coordinates, so this is an orthogonal
  // projection.
  Eigen::MatrixXd sM = dM.colwise().mean().replicate(c.H, 1), sR(c.H, c.H);
  const double dmean = dR.diagonal().mean();
  const double omean = c.H > 1 ? (dR.sum() - dR.diagonal().sum()) / (c.H * (c.H - 1.0)) : 0.0;
  sR.setConstant(omean);
  sR.diagonal().setConstant(dmean);
  const Eigen::VectorXd sb = c.bias ? Eigen::VectorXd(Eigen::VectorXd::Constant(c.H, db.mean())) : Eigen::VectorXd();
  const Eigen::VectorXd sym = c.pack(sM, sR, sb);
  m.symmetric_share = sym.squaredNorm();
  m.kind = m.symmetric_share > 0.5 ? "symmetric" : "head-difference";
  const Eigen::MatrixXd part = m.kind == "symmetric" ? dM : Eigen::MatrixXd(dM - sM);
  const double total = part.squaredNorm();
  if (total > 1e-6) {
    Eigen::Index f = 0;
    const Eigen::VectorXd per_feature = part.colwise().squaredNorm().transpose();
    per_feature.maxCoeff(&f);
    m.feature = static_cast<int>(f);
    m.feature_share = per_feature(f) / total;
  }
  return m;
}

}  // namespace

SymmetricFixedPoint symmetric_fixed_point(const OrderParameterFlow& flow, const PlateauOptions& o, const Eigen::MatrixXd* M_start,
                                          const Eigen::MatrixXd* R_start) {
  const auto start = Clock::now();
  const Config& s = flow.setup();
  const Symmetric sym = Symmetric::of(s);
  SymmetricFixedPoint out;
  Eigen::MatrixXd M0 = M_start ? *M_start : Eigen::MatrixXd::Zero(s.H, s.F);
  Eigen::MatrixXd R0 = R_start ? *R_start : Eigen::MatrixXd(s.init_std * s.init_std * Eigen::MatrixXd::Identity(s.H, s.H));
  Eigen::VectorXd y = sym.from_state(M0, R0, Eigen::VectorXd::Constant(s.H, sym.beta0));
  long calls = 0;
  if (o.t_relax > 0) {
    // Relax along the symmetric flow (reduced coordinates: exactly symmetric, no round-off escape),
    // on a smaller sample set: only the Newton polish needs the full one.
    const OrderParameterFlow coarse(s, [&] {
      FlowOptions fo = flow.options();
      fo.samples = std::max<long>(2000, fo.samples / 8);
      return fo;
    }());
    OdeSystem f = [&](const ConstVecRef& x, VecRef d, double) { d = sym.rhs(coarse, x, &calls); };
    IntegrateOptions io;
    io.rtol = 1e-6;
    io.atol = 1e-9;
    Eigen::VectorXd last = y;
    const auto sum = integrate(f, y, 0.0, {o.t_relax}, [&](double, const Eigen::VectorXd& x) { last = x; return true; }, io);
    if (sum.ok()) y = last;
    out.relax_time = o.t_relax;
  }
  y = solve_stationary_point([&](const Eigen::VectorXd& x) { return sym.rhs(flow, x, &calls); }, y, o.solver, out.summary);
  sym.to_state(y, out.M, out.R, out.b);
  const Coordinates c = Coordinates::of(s);
  out.summary.residual = rhs(flow, c, c.pack(out.M, out.R, out.b), &calls).cwiseAbs().maxCoeff();
  out.summary.evaluations = calls;
  out.summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

SymmetricFixedPoint polish_fixed_point(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R,
                                       const Eigen::VectorXd& b, const PlateauOptions& o) {
  const auto start = Clock::now();
  const Coordinates c = Coordinates::of(flow.setup());
  SymmetricFixedPoint out;
  Eigen::VectorXd x = c.pack(M, R, b);
  long calls = 0;
  x = solve_stationary_point([&](const Eigen::VectorXd& z) { return rhs(flow, c, z, &calls); }, x, o.solver, out.summary);
  c.unpack(x, out.M, out.R, out.b, flow.setup().bias);
  out.summary.residual = rhs(flow, c, x, &calls).cwiseAbs().maxCoeff();
  out.summary.evaluations = calls;
  out.summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

Linearisation linearise(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b,
                        double fd_step) {
  const Coordinates c = Coordinates::of(flow.setup());
  const Eigen::VectorXd x = c.pack(M, R, b);
  auto f = [&](const Eigen::VectorXd& z) { return rhs(flow, c, z, nullptr); };
  Linearisation lin;
  lin.jacobian = central_difference_jacobian(f, x, fd_step);
  // Central differences err by O(h²): J(h) − J(2h) ≈ −3 × that error.
  lin.jacobian_error = (lin.jacobian - central_difference_jacobian(f, x, 2 * fd_step)).cwiseAbs() / 3.0;
  Eigen::EigenSolver<Eigen::MatrixXd> es(lin.jacobian);
  for (int k = 0; k < lin.jacobian.rows(); ++k) lin.modes.push_back(classify(c, es.eigenvalues()(k), es.eigenvectors().col(k).real()));
  std::sort(lin.modes.begin(), lin.modes.end(), [](const Mode& a, const Mode& b) { return a.eigenvalue.real() > b.eigenvalue.real(); });
  lin.lambda_max = -INFINITY;
  for (const auto& m : lin.modes)
    if (m.kind == "head-difference") lin.lambda_max = std::max(lin.lambda_max, m.eigenvalue.real());

  // Hessian of the population risk on the same sample set (second central differences).
  const int n = static_cast<int>(x.size());
  auto risk = [&](const Eigen::VectorXd& z) {
    Eigen::MatrixXd Mz, Rz;
    Eigen::VectorXd bz;
    c.unpack(z, Mz, Rz, bz, flow.setup().bias);
    return flow.risk(Mz, Rz, bz).first;
  };
  const double hs = 1e-3;
  lin.hessian.resize(n, n);
  const double r0 = risk(x);
  for (int i = 0; i < n; ++i) {
    Eigen::VectorXd xp = x, xm = x;
    xp(i) += hs, xm(i) -= hs;
    lin.hessian(i, i) = (risk(xp) - 2 * r0 + risk(xm)) / (hs * hs);
    for (int j = i + 1; j < n; ++j) {
      Eigen::VectorXd a = x, b = x, d = x, e = x;
      a(i) += hs, a(j) += hs;
      b(i) += hs, b(j) -= hs;
      d(i) -= hs, d(j) += hs;
      e(i) -= hs, e(j) -= hs;
      lin.hessian(i, j) = lin.hessian(j, i) = (risk(a) - risk(b) - risk(d) + risk(e)) / (4 * hs * hs);
    }
  }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> hes(lin.hessian);
  for (int k = 0; k < n; ++k) lin.hessian_modes.push_back(classify(c, hes.eigenvalues()(k), hes.eigenvectors().col(k)));
  return lin;
}

namespace {
double interpolate(const std::vector<double>& x, const std::vector<double>& y, double v) {
  for (std::size_t i = 1; i < x.size(); ++i)
    if ((x[i - 1] <= v && v <= x[i]) || (x[i - 1] >= v && v >= x[i]))
      return x[i] == x[i - 1] ? y[i] : y[i - 1] + (y[i] - y[i - 1]) * (v - x[i - 1]) / (x[i] - x[i - 1]);
  return std::nan("");
}
}  // namespace

double GrowthAlongPlateau::Lambda_at(double time) const { return interpolate(t, Lambda, time); }

double GrowthAlongPlateau::escape_time(double D, double c) const { return interpolate(Lambda, t, c + 0.5 * std::log(D)); }

double GrowthAlongPlateau::fit_constant(const std::vector<double>& D, const std::vector<double>& t_escape) const {
  double acc = 0;
  int n = 0;
  for (std::size_t i = 0; i < D.size(); ++i) {
    const double L = Lambda_at(t_escape[i]);
    if (std::isfinite(L)) acc += L - 0.5 * std::log(D[i]), ++n;
  }
  return n ? acc / n : std::nan("");
}

double head_difference_rate(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) {
  const Coordinates c = Coordinates::of(flow.setup());
  const Eigen::MatrixXd J = central_difference_jacobian([&](const Eigen::VectorXd& z) { return rhs(flow, c, z, nullptr); }, c.pack(M, R, b), 1e-5);
  Eigen::EigenSolver<Eigen::MatrixXd> es(J, true);
  double lam = -INFINITY;
  for (int k = 0; k < J.rows(); ++k) {
    const Mode m = classify(c, es.eigenvalues()(k), es.eigenvectors().col(k).real());
    if (m.kind == "head-difference") lam = std::max(lam, m.eigenvalue.real());
  }
  return lam;
}

GrowthAlongPlateau growth_along_plateau(const OrderParameterFlow& flow, double t_max, int points) {
  const Config& s = flow.setup();
  const Symmetric sym = Symmetric::of(s);
  GrowthAlongPlateau g;
  Eigen::MatrixXd M0 = Eigen::MatrixXd::Zero(s.H, s.F), R0 = s.init_std * s.init_std * Eigen::MatrixXd::Identity(s.H, s.H);
  OdeSystem f = [&](const ConstVecRef& x, VecRef d, double) { d = sym.rhs(flow, x, nullptr); };
  IntegrateOptions io;
  io.rtol = 1e-7;
  io.atol = 1e-10;
  integrate(f, sym.from_state(M0, R0, Eigen::VectorXd::Constant(s.H, sym.beta0)), 0.0, lin_spaced(0.0, t_max, points),
            [&](double t, const Eigen::VectorXd& y) {
    Eigen::MatrixXd M, R;
    Eigen::VectorXd b;
    sym.to_state(y, M, R, b);
    const double lam = head_difference_rate(flow, M, R, b);
    g.t.push_back(t);
    g.lambda.push_back(lam);
    g.Lambda.push_back(g.Lambda.empty() ? 0.0 : g.Lambda.back() + 0.5 * (lam + g.lambda[g.lambda.size() - 2]) * (t - g.t[g.t.size() - 2]));
    return true;
  }, io);
  return g;
}

std::vector<int> predicted_order(const Linearisation& lin, int F) {
  // Each feature's fastest head-difference mode (largest real part); features sorted by it.
  std::vector<double> rate(static_cast<std::size_t>(F), -INFINITY);
  for (const auto& m : lin.modes)
    if (m.kind == "head-difference" && m.feature >= 0)
      rate[static_cast<std::size_t>(m.feature)] = std::max(rate[static_cast<std::size_t>(m.feature)], m.eigenvalue.real());
  std::vector<int> order(static_cast<std::size_t>(F));
  for (int f = 0; f < F; ++f) order[static_cast<std::size_t>(f)] = f;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return rate[static_cast<std::size_t>(a)] > rate[static_cast<std::size_t>(b)]; });
  return order;
}

}  // namespace hdat::specialization
