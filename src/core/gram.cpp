#include "hdat/core/gram.hpp"

#include <algorithm>
#include <boost/random/chi_squared_distribution.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cmath>

namespace hdat {

GramRoot gram_root(const Eigen::MatrixXd& C) {
  GramRoot g;
  const Eigen::LLT<Eigen::MatrixXd> llt(C);
  if (llt.info() == Eigen::Success) {
    g.root = llt.matrixL();
    g.rank = static_cast<int>(C.rows());
    return g;
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C);
  const double tol = 1e-12 * std::max(es.eigenvalues().cwiseAbs().maxCoeff(), 1e-300);
  g.rank = static_cast<int>((es.eigenvalues().array() > tol).count());
  g.root = es.eigenvectors().rightCols(g.rank) * es.eigenvalues().tail(g.rank).cwiseSqrt().asDiagonal();
  return g;
}

Eigen::MatrixXd orthogonal_gram(rng::Engine& engine, int n, int dof) {
  if (dof <= 0) return Eigen::MatrixXd::Zero(n, n);
  boost::random::normal_distribution<double> normal;
  Eigen::MatrixXd A;
  if (dof >= n) {
    A = Eigen::MatrixXd::Zero(n, n);
    for (int i = 0; i < n; ++i) {
      A(i, i) = std::sqrt(boost::random::chi_squared_distribution<double>(dof - i)(engine));
      for (int j = 0; j < i; ++j) A(i, j) = normal(engine);
    }
  } else {
    A.resize(n, dof);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < dof; ++j) A(i, j) = normal(engine);
  }
  return A * A.transpose();
}

}  // namespace hdat
