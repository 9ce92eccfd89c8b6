#include "hdat/core/skinny_products.hpp"

#include <stdexcept>

namespace hdat::linalg {

// In a unity build this file shares a unit with others: its helpers live in a namespace of their own.
namespace skinny_kernels {
namespace {

using Index = Eigen::Index;
// The blocks are sized to the register file, so that every sum stays in a register: a packet is one
// register (Eigen maps it to one), and the fields kernel's R × C sums, C weights and a token fill it.
#if defined(__AVX512F__)
constexpr int kLanes = 8;    // doubles per AVX-512 register, 32 registers
constexpr int kRows = 4;     // rows of X per block of the fields kernel
constexpr int kColumns = 6;  // columns of W per block: 4 × 6 sums + 6 weights + 1 token in 31 registers
#else
constexpr int kLanes = 4;    // doubles per AVX register, 16 registers
constexpr int kRows = 2;
constexpr int kColumns = 5;  // 2 × 5 sums + 5 weights + 1 token in 16 registers
#endif
using Packet = Eigen::Array<double, kLanes, 1>;
using PacketMap = Eigen::Map<const Packet>;

// F(r0.., c0..) += X(r0 .. r0+R, :) W(:, c0 .. c0+C): R × C sums along D, one packet of coordinates at a time.
template <int R, int C>
void fields_block(const TokenRows& X, const WeightColumns& W, Eigen::Ref<Eigen::MatrixXd> F, Index r0, Index c0) {
  const Index D = X.cols();
  Packet sum[R][C];
  for (auto& row : sum)
    for (auto& s : row) s.setZero();
  Index d = 0;
  for (; d + kLanes <= D; d += kLanes) {
    Packet w[C];
    for (int c = 0; c < C; ++c) w[c] = PacketMap(W.col(c0 + c).data() + d);
    for (int r = 0; r < R; ++r) {
      const Packet x = PacketMap(X.row(r0 + r).data() + d);
      for (int c = 0; c < C; ++c) sum[r][c] += x * w[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      double s = sum[r][c].sum();
      for (Index k = d; k < D; ++k) s += X(r0 + r, k) * W(k, c0 + c);
      F(r0 + r, c0 + c) += s;
    }
}

// The block shapes at run time: C columns (1 .. kColumns) of R rows (1 .. kRows).
template <int R, int C = kColumns>
void fields_rows(const TokenRows& X, const WeightColumns& W, Eigen::Ref<Eigen::MatrixXd> F, Index r0, Index c0, int columns) {
  if constexpr (C > 1)
    if (columns < C) return fields_rows<R, C - 1>(X, W, F, r0, c0, columns);
  fields_block<R, C>(X, W, F, r0, c0);
}

template <int R = kRows>
void fields_any(const TokenRows& X, const WeightColumns& W, Eigen::Ref<Eigen::MatrixXd> F, Index r0, Index c0, int rows, int columns) {
  if constexpr (R > 1)
    if (rows < R) return fields_any<R - 1>(X, W, F, r0, c0, rows, columns);
  fields_rows<R>(X, W, F, r0, c0, columns);
}

constexpr int kUpdateColumns = 8;  // columns of U per pass: 8 sums, a token, a broadcast weight (10 registers)

// U(:, c0 .. c0+C) += Xᵀ G(:, c0 .. c0+C), one packet of D at a time, from the last to the first.
template <int C>
void update_block(const TokenRows& X, const Eigen::Ref<const Eigen::MatrixXd>& G, WritableWeightColumns U, Index c0) {
  const Index D = X.cols(), L = X.rows();
  const Index whole = D - D % kLanes;
  for (Index k = whole; k < D; ++k)  // the ragged end first: the loop below then runs downwards
    for (int c = 0; c < C; ++c) U(k, c0 + c) += X.col(k).dot(G.col(c0 + c));
  for (Index d = whole - kLanes; d >= 0; d -= kLanes) {
    Packet sum[C];
    for (int c = 0; c < C; ++c) sum[c] = PacketMap(U.col(c0 + c).data() + d);
    for (Index l = 0; l < L; ++l) {
      const Packet x = PacketMap(X.row(l).data() + d);
      for (int c = 0; c < C; ++c) sum[c] += G(l, c0 + c) * x;
    }
    for (int c = 0; c < C; ++c) Eigen::Map<Packet>(U.col(c0 + c).data() + d) = sum[c];
  }
}

template <int C = kUpdateColumns>
void update_any(const TokenRows& X, const Eigen::Ref<const Eigen::MatrixXd>& G, WritableWeightColumns U, Index c0, int columns) {
  if constexpr (C > 1)
    if (columns < C) return update_any<C - 1>(X, G, U, c0, columns);
  update_block<C>(X, G, U, c0);
}

}  // namespace
}  // namespace skinny_kernels

void add_fields(const TokenRows& X, const WeightColumns& W, Eigen::Ref<Eigen::MatrixXd> F) {
  using namespace skinny_kernels;
  if (X.cols() != W.rows() || F.rows() != X.rows() || F.cols() != W.cols())
    throw std::invalid_argument("add_fields: F must be rows(X) x cols(W) and cols(X) = rows(W)");
  for (Index c0 = 0; c0 < W.cols(); c0 += kColumns)
    for (Index r0 = 0; r0 < X.rows(); r0 += kRows)
      fields_any(X, W, F, r0, c0, int(std::min<Index>(kRows, X.rows() - r0)), int(std::min<Index>(kColumns, W.cols() - c0)));
}

void add_transposed_product(const TokenRows& X, const Eigen::Ref<const Eigen::MatrixXd>& G, WritableWeightColumns U) {
  using namespace skinny_kernels;
  if (G.rows() != X.rows() || U.rows() != X.cols() || U.cols() != G.cols())
    throw std::invalid_argument("add_transposed_product: U must be cols(X) x cols(G) and rows(G) = rows(X)");
  for (Index c0 = 0; c0 < G.cols(); c0 += kUpdateColumns)
    update_any(X, G, U, c0, int(std::min<Index>(kUpdateColumns, G.cols() - c0)));
}

}  // namespace hdat::linalg
