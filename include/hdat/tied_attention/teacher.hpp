#pragma once
// The finite-d target S0 (same conventions as the theory's TargetLaw) and Gaussian draws.
#include <Eigen/Dense>

#include "hdat/core/random.hpp"

namespace hdat::tied_attention {

struct TeacherSpec {
  int d = 100;
  double kappa0 = 0.5;
  bool powerlaw = false;
  double gamma = 1.0, Q0 = 1.5;  ///< power law only
};

/// Wishart: S0 = W0 W0ᵀ/√(p0 d), W0 ∈ R^{d×p0} i.i.d. N(0, 1), p0 = round(κ0 d).
/// Power law: S0 = O diag(s) Oᵀ, O Haar, s from power_law_eigenvalues (Tr S0²/d = Q0).
Eigen::MatrixXd sample_teacher(const TeacherSpec& spec, rng::Engine& engine);

/// An n×m matrix of i.i.d. N(0, 1).
Eigen::MatrixXd gaussian_matrix(Eigen::Index n, Eigen::Index m, rng::Engine& engine);

/// A Haar-distributed orthogonal matrix (QR of a Gaussian matrix with the sign fix).
Eigen::MatrixXd haar_orthogonal(int d, rng::Engine& engine);

}  // namespace hdat::tied_attention
