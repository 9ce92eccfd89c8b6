#pragma once
// The per-sample proximal problem of the softmax channel (derivation.md §8):
//   f(Ω, Y) = min_{H ∈ Sym_T} [ Tr(H − Ω)²/(4Σ) + L(Y, H) ],
//   L = Σ_a |y_a − σ_β(H_a·)|²   (softmax channel, row-wise softmax, log-sum-exp)
//   L = Σ_ab (y_ab − H_ab)²      (linear channel: the T = 1 problem field by field)
// over the K = T(T+1)/2 entries H_e, e ↔ (a ≤ b). An entry enters Tr(·)² and |·|_F² with weight
// w_e = 1 (diagonal) or 2 (off-diagonal). Newton with the analytic softmax Jacobian β(diag p − p pᵀ)
// and the exact Hessian, Armijo backtracking, a Levenberg shift when the Hessian is indefinite.
#include <Eigen/Dense>
#include <vector>

namespace hdat::tied_attention {

enum class Channel { softmax, linear };

// Stack-allocated sizes (T <= 8, K <= 36): the prox runs once per Gaussian sample, no heap traffic.
constexpr int kMaxT = 8, kMaxK = 36;
using KVec = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kMaxK, 1>;
using KMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, kMaxK, kMaxK>;
using TVec = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kMaxT, 1>;
using TMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, kMaxT, kMaxT>;

class SymLayout {
 public:
  explicit SymLayout(int T);
  int T() const { return T_; }
  int K() const { return K_; }
  int index(int a, int b) const { return idx_(a, b); }  ///< entry of (a, b) (symmetric)
  int row(int e) const { return ra_[e]; }
  int col(int e) const { return rb_[e]; }
  double weight(int e) const { return ra_[e] == rb_[e] ? 1.0 : 2.0; }     ///< w_e
  double variance_factor(int e) const { return ra_[e] == rb_[e] ? 2.0 : 1.0; }  ///< c_e
  /// The full T×T matrix of the entries.
  TMat matrix(const KVec& v) const;

 private:
  int T_, K_;
  Eigen::MatrixXi idx_;
  std::vector<int> ra_, rb_;
};

/// Row-wise softmax at inverse temperature β (log-sum-exp).
void softmax_rows(const TMat& H, double beta, TMat& P);

/// L(Y, H) with its gradient and Hessian with respect to the K entries (Hessian may be null).
double channel_loss(const SymLayout& L, Channel ch, double beta, const TMat& Y, const KVec& v, KVec* grad, KMat* hess);

struct ProxOptions {
  int max_iter = 50;
  double grad_tol = 1e-10;  ///< on |∇| relative to max(1, |w(v − ω)|/(2Σ))
};

struct ProxResult {
  KVec v;                   ///< minimiser H* (entries)
  double value = 0;         ///< f
  double loss = 0;          ///< L(Y, H*) (the training loss of this sample)
  KMat hess;                ///< Hessian of the objective at H* (K × K)
  int iterations = 0;
  bool converged = false;
};

/// Minimise from `start` (warm start). Σ > 0.
ProxResult prox_solve(const SymLayout& L, Channel ch, double beta, double Sigma, const KVec& omega, const TMat& Y,
                      const KVec& start, const ProxOptions& opt = {});

/// The global minimiser where the prox may be non-convex (derivation.md §8.2): every local minimum
/// lies on a branch where each row of H either stays near Ω (the quadratic wins) or fits its label;
/// Newton is started once per branch — Ω with the diagonal logit of each subset R of rows moved to
/// where row a's softmax weight σ_β(H_a·)_a equals y_aa (all subsets for T <= 3; for T >= 4 the empty
/// set, single rows and all rows, plus the symmetrised label logits) — and from `warm` when given
/// (first, so that ties keep the previous branch). The lowest value wins. Label weights are clamped
/// to [label_floor, 1 − label_floor] (one-hot labels have no finite matching logits).
struct GlobalProxResult {
  ProxResult best;
  int starts = 0;          ///< Newton solves run
  int winner = 0;          ///< index of the start that won (0: `warm` if given, else Ω)
  int distinct_minima = 0; ///< converged minima that differ (in H, relative 1e-6)
};
GlobalProxResult prox_global(const SymLayout& L, Channel ch, double beta, double Sigma, const KVec& omega, const TMat& Y,
                             const KVec* warm, double label_floor, const ProxOptions& opt = {});

}  // namespace hdat::tied_attention
