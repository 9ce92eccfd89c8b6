// linalg::set_product / add_product: every storage order of the operands and of the destination,
// transposed or not, blocks with an outer stride, against the product done in double by Eigen. A
// wrong 'N'/'T' flag, leading dimension or operand order on the oneDNN path gives a different matrix.
#include <doctest/doctest.h>

#include <Eigen/Core>

#include "hdat/core/matrix_product.hpp"

namespace {

using RowF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColF = Eigen::MatrixXf;

// Entries that are small integers over 8: every product and partial sum is exact in float, so the
// float result must equal the double one exactly, whatever the summation order.
template <class M>
M small_integers(Eigen::Index rows, Eigen::Index cols, int seed) {
  M m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = float(((i * 7 + j * 3 + seed * 5) % 9) - 4) / 8.0f;
  return m;
}

template <class Dst, class Lhs, class Rhs>
void check_both(const Lhs& A, const Rhs& B, Eigen::Index rows, Eigen::Index cols) {
  const Eigen::MatrixXd expected = A.template cast<double>() * B.template cast<double>();
  const Dst start = small_integers<Dst>(rows, cols, 9);
  Dst C = start;
  hdat::linalg::set_product(C, A, B);
  CHECK(C.template cast<double>() == expected);
  C = start;
  hdat::linalg::add_product(C, A, B);
  CHECK(C.template cast<double>() == expected + start.template cast<double>());
}

}  // namespace

TEST_CASE("float products: every storage order and transposition, row- and column-major destinations") {
  INFO("oneDNN in this build: " << hdat::linalg::onednn_available());
  const Eigen::Index m = 37, k = 29, n = 23;  // unequal and odd: a swapped dimension cannot pass
  const RowF Ar = small_integers<RowF>(m, k, 1);
  const ColF Ac = small_integers<ColF>(m, k, 1);
  const RowF Br = small_integers<RowF>(k, n, 2);
  const ColF Bc = small_integers<ColF>(k, n, 2);
  const RowF ArT = Ar.transpose(), BrT = Br.transpose();  // stored as the transposes, used transposed
  const ColF AcT = Ac.transpose(), BcT = Bc.transpose();
  SUBCASE("row-major destination") {
    check_both<RowF>(Ar, Br, m, n);
    check_both<RowF>(Ar, Bc, m, n);
    check_both<RowF>(Ac, Br, m, n);
    check_both<RowF>(Ac, Bc, m, n);
    check_both<RowF>(ArT.transpose(), BrT.transpose(), m, n);
    check_both<RowF>(AcT.transpose(), Br, m, n);
    check_both<RowF>(Ar, BcT.transpose(), m, n);
  }
  SUBCASE("column-major destination") {
    check_both<ColF>(Ar, Br, m, n);
    check_both<ColF>(Ac, Bc, m, n);
    check_both<ColF>(ArT.transpose(), Bc, m, n);
    check_both<ColF>(Ac, BrT.transpose(), m, n);
    check_both<ColF>(AcT.transpose(), BcT.transpose(), m, n);
  }
}

TEST_CASE("float products on blocks: an outer stride larger than the width, as the transformer's heads") {
  const RowF big_A = small_integers<RowF>(40, 50, 3), big_B = small_integers<RowF>(60, 30, 4);
  const auto A = big_A.block(2, 5, 31, 17);  // leading dimension 50
  const auto B = big_B.block(1, 3, 17, 19);  // leading dimension 30
  const Eigen::MatrixXd expected = A.cast<double>() * B.cast<double>();
  RowF out = small_integers<RowF>(35, 44, 5);
  const RowF before = out;
  auto C = out.block(3, 4, 31, 19);
  hdat::linalg::add_product(C, A, B);
  CHECK(out.block(3, 4, 31, 19).cast<double>() == expected + before.block(3, 4, 31, 19).cast<double>());
  // What lies outside the destination block is untouched.
  out.block(3, 4, 31, 19) = before.block(3, 4, 31, 19);
  CHECK(out == before);
}

TEST_CASE("float products on two threads agree with one, and double products go to Eigen") {
  const RowF A = small_integers<RowF>(300, 128, 6);
  const ColF B = small_integers<ColF>(128, 96, 7);
  RowF one(300, 96), two(300, 96);
  const int saved = Eigen::nbThreads();
  Eigen::setNbThreads(1);
  hdat::linalg::set_product(one, A, B);
  Eigen::setNbThreads(2);
  hdat::linalg::set_product(two, A, B);
  Eigen::setNbThreads(saved);
  CHECK(one == two);  // exact entries: any split of the sum gives the same numbers
  CHECK(one.cast<double>() == A.cast<double>() * B.cast<double>());
  const Eigen::MatrixXd Ad = A.cast<double>(), Bd = B.cast<double>();
  Eigen::MatrixXd Cd = Eigen::MatrixXd::Zero(300, 96);
  hdat::linalg::add_product(Cd, Ad, Bd);
  CHECK(Cd == Ad * Bd);
}

TEST_CASE("a product of mismatched shapes is refused before anything is written") {
  const RowF A = small_integers<RowF>(5, 4, 1), B = small_integers<RowF>(3, 6, 2);
  RowF C = RowF::Zero(5, 6);
  CHECK_THROWS_AS(hdat::linalg::add_product(C, A, B), std::invalid_argument);
  CHECK(C == RowF::Zero(5, 6));
  const RowF B2 = small_integers<RowF>(4, 6, 2);
  RowF wrong = RowF::Zero(5, 7);
  CHECK_THROWS_AS(hdat::linalg::set_product(wrong, A, B2), std::invalid_argument);
}
