#pragma once
// Finite-d ERM of the tied single-head attention model (T >= 2):
//   h_ab(S) = (x_aᵀ S x_b − δ_ab Tr S)/√d,   prediction σ_β(h) (row-wise softmax, log-sum-exp)
//   seq2lab: ℓ = |σ_β0(h0 + N) − σ_β(h)|_F²   (hardmax labels: σ_β0 → one-hot at each row's argmax)
//   seq2seq: ℓ = |σ_β0(h0 + N) X − σ_β(h) X|_F²/d = Tr[(σ − Y) K (σ − Y)ᵀ], K = X Xᵀ/d
// with N symmetric Gaussian noise (variance Δ on the diagonal, Δ/2 off it), n = α d² sequences,
// objective Σ_μ ℓ_μ + penalty:
//   convex:     S ⪰ 0, d λ̃ Tr S (proximal gradient with backtracking, eigenvalue soft-thresholding)
//   factorized: W ∈ R^{d×p}, S = W Wᵀ/√(pd), λ|W|² = d λ̃ Tr S (L-BFGS)
//   direct:     symmetric S, d λ_F Tr S² (L-BFGS)
#include <Eigen/Dense>
#include <string>

#include "hdat/tied_attention/sensing.hpp"

namespace hdat::tied_attention {

/// Row-major storage: every per-sequence operation reads consecutive rows.
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct AttentionData {
  int d = 0, T = 0;
  double beta = 1, beta0 = 1, noise = 0;
  bool seq2seq = false;
  bool hardmax = false;  ///< labels one-hot at each row's argmax (β0 → ∞) instead of σ_β0
  Eigen::MatrixXd S0;  ///< d × d
  RowMatrix X;   ///< (n T) × d: row μT + a is token a of sequence μ
  RowMatrix Y;   ///< (n T) × T: row μT + a is row a of σ_β0(h0 + N) for sequence μ
  RowMatrix Y0;  ///< the same without noise (clean labels)
  RowMatrix K;   ///< (n T) × T: X_μ X_μᵀ/d (seq2seq only)
  long n() const { return T ? X.rows() / T : 0; }
};

struct AttentionSpec {
  TeacherSpec teacher;
  int T = 2;
  double beta = 1, beta0 = 1, noise = 0;
  bool seq2seq = false;
  bool hardmax = false;  ///< hardmax labels (channel=hardmax); the student still predicts σ_β(h)
};

/// n sequences; the target S0 from `teacher_seed` (shared by training and test sets of one run).
AttentionData make_attention_data(const AttentionSpec& spec, const Eigen::MatrixXd& S0, long n, std::uint64_t seed,
                                  std::uint64_t replica, std::uint64_t stream);

/// Fields h_μ(S) as an (n T) × T matrix (row μT + a = h_μ,a·).
RowMatrix attention_fields(const AttentionData& data, const Eigen::MatrixXd& S);

/// Σ_μ ℓ_μ and, if grad, its gradient with respect to a symmetric S (symmetrised).
double attention_loss(const AttentionData& data, const Eigen::MatrixXd& S, Eigen::MatrixXd* grad, bool clean = false);

struct AttentionResult {
  std::string method;
  Eigen::MatrixXd S;
  Eigen::VectorXd eigenvalues;
  double train_loss = 0;     ///< (1/n) Σ ℓ_μ
  double test_error = 0;     ///< fresh sequences, noisy labels
  double test_error_clean = 0;
  double test_se = 0;        ///< standard error of the test-set mean
  double mse = 0, rank = 0, trace = 0, objective = 0;
  long iterations = 0, gradient_evaluations = 0;
  bool converged = false;
  double wall_seconds = 0;
  std::string message;
};

AttentionResult train_attention(const AttentionData& train, const AttentionData& test, const std::string& method,
                                double lambda, const ErmOptions& opt);

/// The factorised objective (Σ ℓ + λ|W|²)/d² and its gradient in W (tests).
double attention_factorized_objective(const AttentionData& data, double lambda_tilde, const Eigen::MatrixXd& W,
                                      Eigen::MatrixXd* grad);

}  // namespace hdat::tied_attention
