#pragma once
// The laws behind the exact reduced simulators (committee derivation.md §8, specialization §9): what
// isotropic Gaussian data look like through the Gram matrix C = WᵀW/D of the weights.
//   - the fields u = Wᵀx/√D of x ~ N(0, I_D) are N(0, C): u = B y with B Bᵀ = C, y ~ N(0, I_r),
//     r = rank C, and |Px|² = |y|² (P the projection on span W);
//   - the parts of n such inputs orthogonal to span W have a Gram matrix Wishart_n(D − r, I).
#include <Eigen/Dense>

#include "hdat/core/random.hpp"

namespace hdat {

/// B (p × r) with B Bᵀ = C: the Cholesky factor where C is positive definite (r = p), else the
/// eigen root on the eigenvalues above 1e-12 of the largest (a weight still zero, N < p ...).
struct GramRoot {
  Eigen::MatrixXd root;
  int rank = 0;
};
GramRoot gram_root(const Eigen::MatrixXd& C);

/// The Gram matrix of n independent N(0, I_dof) vectors, Wishart_n(dof, I): Bartlett's decomposition
/// where dof ≥ n (A lower triangular, A_ii² ~ χ²_{dof − i}, N(0, 1) below the diagonal; for each row
/// the χ² first, then the normals), else the vectors themselves; zero for dof ≤ 0.
Eigen::MatrixXd orthogonal_gram(rng::Engine& engine, int n, int dof);

}  // namespace hdat
