#pragma once
// The two products of a full-dimensional simulator's step, for a short and very wide token matrix X
// (L rows of dimension D, row-major) and a few weight vectors (P columns of dimension D):
//   fields   F  = X W    (L × P),  and
//   update   U += Xᵀ G   (D × P′, G being L × P′).
// Eigen's general product packs X into panels before multiplying (at L = 32, D = 10⁴, P = 5 that copy
// is as costly as the product): these kernels read X once, in place, vectorised along D, with the
// L × P sums in registers. The update runs along D from the end to the start, so that right after
// X was written from the start to the end its most recent part is still in cache.
#include <Eigen/Core>

namespace hdat::linalg {

using TokenRows = Eigen::Ref<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;
using WeightColumns = Eigen::Ref<const Eigen::MatrixXd, 0, Eigen::OuterStride<>>;
using WritableWeightColumns = Eigen::Ref<Eigen::MatrixXd, 0, Eigen::OuterStride<>>;

/// F += X W (F is rows(X) × cols(W), column-major; X and W may be blocks: X's columns and W's rows
/// are the same range of the D coordinates).
void add_fields(const TokenRows& X, const WeightColumns& W, Eigen::Ref<Eigen::MatrixXd> F);

/// U += Xᵀ G (U is cols(X) × cols(G); G is rows(X) × cols(G)).
void add_transposed_product(const TokenRows& X, const Eigen::Ref<const Eigen::MatrixXd>& G, WritableWeightColumns U);

}  // namespace hdat::linalg
