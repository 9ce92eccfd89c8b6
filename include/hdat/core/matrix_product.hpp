#pragma once
// Matrix products C = A B and C += A B that run on oneDNN's sgemm when the scalar is float (the trained
// transformers' float32 path) and hdat is built with it (HDAT_ONEDNN, the default), and on Eigen's
// product otherwise. At the sinks transformer's shapes (3072 × 128 × {128, 512}) oneDNN's kernels do
// 66–77 · 10⁹ multiply-adds per second on this machine's core against Eigen's 59–62
// (docs/sinks.md, "Speed"). Either way it is the same product, rounded differently; the
// operands must not alias the destination (as Eigen's noalias()).
//
// An operand is passed as any Eigen matrix expression with direct access and unit inner stride,
// row- or column-major, transposed or not (a Matrix, Map, Ref, Block or their .transpose()); anything
// else goes to Eigen.
#include <Eigen/Core>

#include <stdexcept>
#include <type_traits>

namespace hdat::linalg {

/// A float matrix in memory: element (i, j) at data[i·ld + j] if row_major, data[j·ld + i] if not.
struct FloatMatrixView {
  const float* data;
  Eigen::Index rows, cols, ld;
  bool row_major;
};

/// C ← A B + β C by oneDNN, C being rows(A) × cols(B) at c (leading dimension ldc). Returns false
/// (and does nothing) where hdat is built without oneDNN. Runs on Eigen::nbThreads() threads, as
/// Eigen's product would (one inside an OpenMP parallel region).
bool onednn_product(const FloatMatrixView& A, const FloatMatrixView& B, float beta, float* c, Eigen::Index ldc,
                    bool c_row_major);

/// Whether this build has oneDNN's sgemm (HDAT_ONEDNN).
bool onednn_available();

namespace matrix_product_detail {
template <class E>
constexpr bool is_float_in_memory() {
  using X = std::decay_t<E>;
  return std::is_same_v<typename X::Scalar, float> && (int(X::Flags) & Eigen::DirectAccessBit) != 0 &&
         int(X::InnerStrideAtCompileTime) == 1;
}

template <class E>
FloatMatrixView view_of(const E& e) {
  return {e.data(), e.rows(), e.cols(), e.outerStride(), bool(std::decay_t<E>::IsRowMajor)};
}

template <class Dst, class Lhs, class Rhs>
void product(Dst&& C, const Lhs& A, const Rhs& B, float beta) {
  if (A.cols() != B.rows() || C.rows() != A.rows() || C.cols() != B.cols())
    throw std::invalid_argument("linalg product: C must be rows(A) x cols(B) and cols(A) = rows(B)");
  if constexpr (is_float_in_memory<Dst>() && is_float_in_memory<Lhs>() && is_float_in_memory<Rhs>()) {
    const bool matrices = A.rows() > 1 && A.cols() > 1 && B.cols() > 1;  // a vector's storage order is ambiguous
    if (matrices && onednn_product(view_of(A), view_of(B), beta, C.data(), C.outerStride(), bool(std::decay_t<Dst>::IsRowMajor)))
      return;
  }
  if (beta == 0)
    C.noalias() = A * B;
  else
    C.noalias() += A * B;
}
}  // namespace matrix_product_detail

/// C = A B (C already of that shape).
template <class Dst, class Lhs, class Rhs>
void set_product(Dst&& C, const Lhs& A, const Rhs& B) {
  matrix_product_detail::product(C, A, B, 0.0f);
}

/// C += A B.
template <class Dst, class Lhs, class Rhs>
void add_product(Dst&& C, const Lhs& A, const Rhs& B) {
  matrix_product_detail::product(C, A, B, 1.0f);
}

}  // namespace hdat::linalg
