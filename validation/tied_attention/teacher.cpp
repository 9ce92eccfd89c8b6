#include "hdat/tied_attention/teacher.hpp"

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <cmath>

#include "hdat/tied_attention/target.hpp"

namespace hdat::tied_attention {

Eigen::MatrixXd gaussian_matrix(Eigen::Index n, Eigen::Index m, rng::Engine& engine) {
  boost::random::normal_distribution<double> N01;
  Eigen::MatrixXd A(n, m);
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index i = 0; i < n; ++i) A(i, j) = N01(engine);
  return A;
}

Eigen::MatrixXd haar_orthogonal(int d, rng::Engine& engine) {
  const Eigen::MatrixXd G = gaussian_matrix(d, d, engine);
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(G);
  Eigen::MatrixXd Q = qr.householderQ();
  const Eigen::MatrixXd R = qr.matrixQR().triangularView<Eigen::Upper>();
  for (int j = 0; j < d; ++j)
    if (R(j, j) < 0) Q.col(j) *= -1;  // makes the law exactly Haar
  return Q;
}

Eigen::MatrixXd sample_teacher(const TeacherSpec& spec, rng::Engine& engine) {
  const int d = spec.d;
  if (!spec.powerlaw) {
    const int p0 = std::clamp(static_cast<int>(std::lround(spec.kappa0 * d)), 1, 1 << 20);
    const Eigen::MatrixXd W0 = gaussian_matrix(d, p0, engine);
    return (W0 * W0.transpose()) / std::sqrt(static_cast<double>(p0) * d);
  }
  const auto s = power_law_eigenvalues(d, spec.kappa0, spec.gamma, spec.Q0);
  const Eigen::MatrixXd O = haar_orthogonal(d, engine);
  const Eigen::VectorXd sv = Eigen::Map<const Eigen::VectorXd>(s.data(), d);
  return O * sv.asDiagonal() * O.transpose();
}

}  // namespace hdat::tied_attention
