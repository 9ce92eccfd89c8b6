// linalg::add_fields and add_transposed_product against Eigen's product: every block shape of the
// kernels (rows 1..9 against blocks of 4, columns 1..14 against blocks of 6 and 8), dimensions with
// and without a ragged end (D mod 8), and blocks of wider matrices (the simulator's chunks). Entries
// are small multiples of 1/8, so every sum is exact and the comparison is equality.
#include <doctest/doctest.h>

#include <Eigen/Core>

#include "hdat/core/skinny_products.hpp"

namespace {
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class M>
M eighths(Eigen::Index rows, Eigen::Index cols, int seed) {
  M m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = double(((i * 5 + j * 3 + seed * 7) % 11) - 5) / 8.0;
  return m;
}
}  // namespace

TEST_CASE("add_fields: F += X W for every block shape, ragged D included") {
  for (int D : {5, 8, 61, 200})
    for (int L = 1; L <= 9; ++L)
      for (int P = 1; P <= 14; P += (P < 8 ? 1 : 3)) {
        CAPTURE(D);
        CAPTURE(L);
        CAPTURE(P);
        const RowMatrix X = eighths<RowMatrix>(L, D, 1);
        const Eigen::MatrixXd W = eighths<Eigen::MatrixXd>(D, P, 2);
        const Eigen::MatrixXd start = eighths<Eigen::MatrixXd>(L, P, 3);
        Eigen::MatrixXd F = start;
        hdat::linalg::add_fields(X, W, F);
        CHECK(F == start + X * W);
      }
}

TEST_CASE("add_transposed_product: U += Xᵀ G for every block shape, ragged D included") {
  for (int D : {5, 8, 61, 200})
    for (int L = 1; L <= 9; L += 2)
      for (int P = 1; P <= 14; P += (P < 9 ? 1 : 3)) {
        CAPTURE(D);
        CAPTURE(L);
        CAPTURE(P);
        const RowMatrix X = eighths<RowMatrix>(L, D, 4);
        const Eigen::MatrixXd G = eighths<Eigen::MatrixXd>(L, P, 5);
        const Eigen::MatrixXd start = eighths<Eigen::MatrixXd>(D, P, 6);
        Eigen::MatrixXd U = start;
        hdat::linalg::add_transposed_product(X, G, U);
        CHECK(U == start + X.transpose() * G);
      }
}

TEST_CASE("the kernels on chunks of wider matrices, as the simulator calls them") {
  const int L = 6, D = 100, P = 5;
  const RowMatrix X = eighths<RowMatrix>(L, D, 7);
  const Eigen::MatrixXd W = eighths<Eigen::MatrixXd>(D, P + 2, 8), G = eighths<Eigen::MatrixXd>(L, P, 9);
  Eigen::MatrixXd F = Eigen::MatrixXd::Zero(L, P);
  for (int d0 = 0; d0 < D; d0 += 24) {  // chunks of 24, the last one of 4
    const int n = std::min(24, D - d0);
    hdat::linalg::add_fields(X.middleCols(d0, n), W.block(d0, 1, n, P), F);
  }
  CHECK(F == X * W.middleCols(1, P));
  Eigen::MatrixXd U = Eigen::MatrixXd::Zero(D + 3, P + 1);
  hdat::linalg::add_transposed_product(X.middleCols(0, D), G, U.block(3, 1, D, P));
  CHECK(U.block(3, 1, D, P) == X.transpose() * G);
  CHECK(U.col(0).isZero());
  CHECK(U.topRows(3).isZero());
}

TEST_CASE("the kernels refuse mismatched shapes") {
  const RowMatrix X = eighths<RowMatrix>(3, 10, 1);
  Eigen::MatrixXd F = Eigen::MatrixXd::Zero(3, 2), U = Eigen::MatrixXd::Zero(10, 2);
  CHECK_THROWS_AS(hdat::linalg::add_fields(X, eighths<Eigen::MatrixXd>(9, 2, 2), F), std::invalid_argument);
  CHECK_THROWS_AS(hdat::linalg::add_transposed_product(X, eighths<Eigen::MatrixXd>(4, 2, 2), U), std::invalid_argument);
}
