#include "hdat/polarization/instance.hpp"

#include <fmt/format.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <functional>

#include "hdat/core/error.hpp"
#include "hdat/core/random.hpp"
#include "hdat/polarization/numpy_random.hpp"

namespace hdat::polarization {

Eigen::MatrixXd conditioned_design(const Eigen::MatrixXd& raw, double kappa) {
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(raw, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::Index k = svd.singularValues().size();
  Eigen::VectorXd S(k);
  for (Eigen::Index i = 0; i < k; ++i) S(i) = k == 1 ? 1.0 : 1.0 + (1.0 / kappa - 1.0) * static_cast<double>(i) / static_cast<double>(k - 1);
  return svd.matrixU() * S.asDiagonal() * svd.matrixV().transpose();
}

namespace {

Eigen::VectorXd softmax_of(const Eigen::VectorXd& x) {
  const double m = x.maxCoeff();
  Eigen::VectorXd e = (x.array() - m).exp();
  return e / e.sum();
}

// A source of normals and uniforms; `reset` restarts it from the seed (np.random.seed(s) again).
struct Draws {
  std::function<double()> normal, uniform;
};

// The draws common to both orders: the target, then the initial parameters.
void draw_target(const Config& c, Instance& in, Draws& g) {
  switch (c.loss) {
    case Loss::logistic:
    case Loss::square: {
      in.beta_star.resize(c.d);
      for (int i = 0; i < c.d; ++i) in.beta_star(i) = g.normal();
      in.beta_star *= c.beta_norm / in.beta_star.norm();
      break;
    }
    case Loss::regression: {
      Eigen::MatrixXd raw(c.n, c.d);
      for (int i = 0; i < c.n; ++i)
        for (int j = 0; j < c.d; ++j) raw(i, j) = g.normal();  // row-major, as randn(n, d)
      in.X = conditioned_design(raw, c.kappa);
      in.y.resize(c.n);
      for (int i = 0; i < c.n; ++i) in.y(i) = g.normal();
      break;
    }
    case Loss::xent: {
      Eigen::VectorXd r(c.d);
      for (int i = 0; i < c.d; ++i) r(i) = g.uniform();
      in.p_star = c.p_star ? *c.p_star : softmax_of(c.target_sharpness * r);
      break;
    }
  }
}

void draw_parameters(const Config& c, Instance& in, Draws& g) {
  if (c.architecture == Architecture::tied) {
    // The authors' tied solver draws a value matrix it then replaces by U(0) = I; the draws are
    // consumed so that a(0) comes out as theirs.
    for (int k = 0; k < c.d * c.T; ++k) (void)g.normal();
    in.V0 = c.U0_scale * Eigen::MatrixXd::Identity(c.d, c.T);
  } else {
    in.V0.resize(c.d, c.T);
    if (c.loss == Loss::xent) {
      // The authors' xent script holds V as T×k with logits Vᵀs; ours is its transpose.
      for (int i = 0; i < c.T; ++i)
        for (int j = 0; j < c.d; ++j) in.V0(j, i) = c.V0_std * g.normal();
    } else {
      for (int i = 0; i < c.d; ++i)
        for (int j = 0; j < c.T; ++j) in.V0(i, j) = c.V0_std * g.normal();  // row-major, as randn(d, T)
    }
  }
  in.a0.resize(c.T);
  for (int i = 0; i < c.T; ++i) in.a0(i) = c.a0_mean + c.a0_std * g.normal();  // drawn even when a0_std = 0
}

// V(0) with V(0)ᵀβ* = u0 and V(0)ᵀV(0) = Q0, for β* = |β*| e_0 (derivation.md §7).
Eigen::MatrixXd value_matrix_from(const Config& c, const Eigen::VectorXd& u0, const Eigen::MatrixXd& Q0) {
  const double bn = c.beta_norm;
  Eigen::MatrixXd V = Eigen::MatrixXd::Zero(c.d, c.T);
  V.row(0) = u0.transpose() / bn;
  const Eigen::MatrixXd R = Q0 - u0 * u0.transpose() / (bn * bn);  // the part of VᵀV orthogonal to β*
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(R);
  const double scale = 1.0 + Q0.cwiseAbs().maxCoeff();
  int row = 1;
  for (Eigen::Index k = es.eigenvalues().size() - 1; k >= 0; --k) {
    const double lam = es.eigenvalues()(k);
    if (lam < -1e-10 * scale)
      throw InputError("Q0", fmt::format("Q0 − u0 u0ᵀ/|β*|² must be positive semi-definite (eigenvalue {:.3g}): no V has these overlaps", lam));
    if (lam <= 1e-12 * scale) continue;
    if (row >= c.d)
      throw InputError("Q0", fmt::format("Q0 − u0 u0ᵀ/|β*|² has rank above d − 1 = {}: raise d", c.d - 1));
    V.row(row++) = std::sqrt(lam) * es.eigenvectors().col(k).transpose();
  }
  return V;
}

}  // namespace

Instance make_instance(const Config& c) {
  Instance in;
  if (c.init == Init::explicit_values) {
    in.beta_star = Eigen::VectorXd::Zero(c.d);
    in.beta_star(0) = c.beta_norm;
    in.u0 = *c.u0;
    in.Q0 = c.Q0 ? *c.Q0 : Eigen::MatrixXd(in.u0 * in.u0.transpose() / c.b());
    in.V0 = value_matrix_from(c, in.u0, in.Q0);
    in.a0 = c.a0 ? *c.a0 : Eigen::VectorXd::Zero(c.T);
    in.direction = in.beta_star;
    return in;
  }
  if (c.init == Init::random) {
    auto teacher = rng::engine(c.seed, 0, rng::teacher);
    auto data = rng::engine(c.seed, 0, rng::training_data);
    auto student = rng::engine(c.seed, 0, rng::student_init);
    auto asym = rng::engine(c.seed, 0, rng::asymmetry);
    boost::random::normal_distribution<double> N;
    boost::random::uniform_01<double> U;
    Draws target{[&] { return c.loss == Loss::regression ? N(data) : N(teacher); }, [&] { return U(teacher); }};
    draw_target(c, in, target);
    in.V0.resize(c.d, c.T);
    if (c.architecture == Architecture::tied) {
      in.V0 = c.U0_scale * Eigen::MatrixXd::Identity(c.d, c.T);
    } else {
      for (int j = 0; j < c.T; ++j)
        for (int i = 0; i < c.d; ++i) in.V0(i, j) = c.V0_std * N(student);
    }
    in.a0.resize(c.T);
    for (int i = 0; i < c.T; ++i) in.a0(i) = c.a0_mean + c.a0_std * N(asym);
  } else {
    NumpyLegacyRandom np(static_cast<std::uint32_t>(c.seed));
    Draws g{[&] { return np.normal(); }, [&] { return np.uniform(); }};
    if (c.init == Init::numpy) {  // the toy scripts: V, a, then the target
      draw_parameters(c, in, g);
      draw_target(c, in, g);
    } else {  // the solver scripts: the target, np.random.seed(seed) again, then V and a
      draw_target(c, in, g);
      np = NumpyLegacyRandom(static_cast<std::uint32_t>(c.seed));
      draw_parameters(c, in, g);
    }
  }
  if (c.a0) in.a0 = *c.a0;
  switch (c.loss) {
    case Loss::logistic:
    case Loss::square: in.direction = in.beta_star; break;
    case Loss::regression: in.direction = in.X.transpose() * in.y; break;
    case Loss::xent: in.direction = in.p_star; break;
  }
  in.u0 = in.V0.transpose() * in.direction;
  in.Q0 = in.V0.transpose() * in.V0;
  return in;
}

double Instance::design_condition_number() const {
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(X);
  const auto& sv = svd.singularValues();
  return sv(0) / sv(sv.size() - 1);
}

nlohmann::json Instance::record(const Config& c) const {
  auto list = [](const Eigen::VectorXd& v) { return std::vector<double>(v.data(), v.data() + v.size()); };
  nlohmann::json j;
  j["init"] = name(c.init);
  j["seed"] = c.seed;
  j["u0"] = list(u0);
  j["a0"] = list(a0);
  j["V0_frobenius"] = V0.norm();
  j["winner_predicted"] = [&] {  // argmax u(0): the token the logistic flow from a(0) = 0 polarises to
    Eigen::Index k = 0;
    u0.maxCoeff(&k);
    return static_cast<int>(k);
  }();
  if (beta_star.size()) j["beta_star_norm"] = beta_star.norm();
  if (X.size()) j["design_condition_number"] = design_condition_number();
  if (p_star.size()) j["p_star"] = list(p_star);
  return j;
}

}  // namespace hdat::polarization
