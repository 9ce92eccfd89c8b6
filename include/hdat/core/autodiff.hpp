#pragma once
// Forward-mode automatic differentiation for exact Jacobians of right-hand sides written for any
// scalar type (Eigen's AutoDiffScalar): a dual number carries its value and its derivatives along up
// to kMaxDirections directions, in fixed storage (no allocation per operation).
#include <unsupported/Eigen/AutoDiff>

namespace hdat {

inline constexpr int kMaxDirections = 64;
using Derivatives = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kMaxDirections, 1>;
using Dual = Eigen::AutoDiffScalar<Derivatives>;

/// A constant (zero derivatives along n directions).
inline Dual dual_constant(double value, int n) { return Dual(value, Derivatives::Zero(n)); }
/// The independent variable number k of n.
inline Dual dual_variable(double value, int n, int k) { return Dual(value, n, k); }

}  // namespace hdat
