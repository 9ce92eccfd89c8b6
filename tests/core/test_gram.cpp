#include <doctest/doctest.h>

#include "hdat/core/gram.hpp"
#include "hdat/core/statistics.hpp"

using namespace hdat;

TEST_CASE("gram_root: B B^T = C with the rank, positive definite and singular") {
  Eigen::Matrix3d C;
  C << 2, 0.5, 0.1, 0.5, 1, 0.2, 0.1, 0.2, 0.7;
  GramRoot g = gram_root(C);
  CHECK(g.rank == 3);
  CHECK((g.root * g.root.transpose() - C).cwiseAbs().maxCoeff() < 1e-14);
  // A zero weight: rank 2, and the root still reproduces C.
  C.row(2).setZero();
  C.col(2).setZero();
  g = gram_root(C);
  CHECK(g.rank == 2);
  CHECK(g.root.cols() == 2);
  CHECK((g.root * g.root.transpose() - C).cwiseAbs().maxCoeff() < 1e-14);
}

TEST_CASE("orthogonal_gram is Wishart_n(dof, I): E = dof I, Var(diagonal) = 2 dof, Var(off-diagonal) = dof, both branches") {
  for (auto [n, dof] : {std::pair{4, 30}, std::pair{5, 3}, std::pair{1, 12}}) {
    CAPTURE(n);
    CAPTURE(dof);
    auto eng = rng::engine(21, static_cast<std::uint64_t>(n), rng::user);
    std::vector<double> diag, off;
    const int draws = 20000;
    for (int k = 0; k < draws; ++k) {
      const Eigen::MatrixXd G = orthogonal_gram(eng, n, dof);
      REQUIRE(G.rows() == n);
      diag.push_back(G(n - 1, n - 1));  // the last row: the smallest χ² of Bartlett's
      if (n > 1) off.push_back(G(n - 1, 0));
    }
    const stats::MeanSe d = stats::mean_se(diag);
    CHECK(std::fabs(d.mean - dof) < 4 * d.se);
    CHECK(d.se * std::sqrt(double(draws)) == doctest::Approx(std::sqrt(2.0 * dof)).epsilon(0.05));
    if (n > 1) {
      const stats::MeanSe o = stats::mean_se(off);
      CHECK(std::fabs(o.mean) < 4 * o.se);
      CHECK(o.se * std::sqrt(double(draws)) == doctest::Approx(std::sqrt(double(dof))).epsilon(0.05));
    }
  }
  auto eng = rng::engine(1, 0, rng::user);
  CHECK(orthogonal_gram(eng, 3, 0).cwiseAbs().maxCoeff() == 0.0);
}
