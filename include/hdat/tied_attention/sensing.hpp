#pragma once
// T = 1 at finite d: matrix sensing with y = Tr(Z S0) + √Δ ξ, Z = (x xᵀ − I)/√d, n = α d² samples,
// and three ways to train (derivation.md §7):
//  - convex:      min_{S ⪰ 0} Σ (y − Tr Z S)² + d λ̃ Tr S      (FISTA, eigenvalue soft-thresholding)
//  - factorized:  min_W Σ (y − Tr Z W Wᵀ/√(pd))² + λ |W|_F²  (L-BFGS; λ = λ̃ √(d/p))
//  - direct:      min_{S = Sᵀ} Σ (y − Tr Z S)² + d λ_F Tr S²  (conjugate gradient on the normal equations)
#include <Eigen/Dense>
#include <functional>
#include <string>

#include "hdat/core/random.hpp"
#include "hdat/tied_attention/teacher.hpp"
#include "hdat/tied_attention/lbfgs.hpp"

namespace hdat::tied_attention {

/// Scope guard: Eigen runs single-threaded inside one training run (restored on exit).
class SingleThreadedEigen {
 public:
  SingleThreadedEigen();
  ~SingleThreadedEigen();
  SingleThreadedEigen(const SingleThreadedEigen&) = delete;
  SingleThreadedEigen& operator=(const SingleThreadedEigen&) = delete;

 private:
  int saved_ = 0;
};

struct SensingData {
  int d = 0;
  double noise = 0;
  Eigen::MatrixXd S0;  ///< d × d
  Eigen::MatrixXd X;   ///< n × d, rows x_μ
  Eigen::VectorXd y;   ///< n labels
};

SensingData make_sensing_data(const TeacherSpec& teacher, long n, double noise, std::uint64_t seed, std::uint64_t replica = 0);
/// Fresh samples for a given target (validation sets): data from stream `stream` of (seed, replica).
SensingData make_sensing_data(const Eigen::MatrixXd& S0, long n, double noise, std::uint64_t seed, std::uint64_t replica,
                              std::uint64_t stream);

/// A(S)_μ = (x_μᵀ S x_μ − Tr S)/√d and its adjoint Aᵀ(r) = (Xᵀ diag(r) X − (Σ r) I)/√d.
Eigen::VectorXd sensing_apply(const SensingData& data, const Eigen::MatrixXd& S);
Eigen::MatrixXd sensing_adjoint(const SensingData& data, const Eigen::VectorXd& r);

struct ErmOptions {
  double tol = 1e-9;        ///< relative change of the iterate (convex, direct) / objective (factorized)
  long max_iter = 20000;
  double width = 1.0;       ///< κ = p/d for factorized training
  std::uint64_t init_seed = 0;
};

struct ErmResult {
  std::string method;
  Eigen::MatrixXd S;
  Eigen::VectorXd eigenvalues;  ///< of S, increasing
  double mse = 0;               ///< |S − S0|_F²/d
  double train_loss = 0;        ///< (1/n) Σ (y − Tr Z S)²
  double test_error = 0;        ///< E (y_new − Tr Z_new S)² = 2 |S − S0|_F²/d + Δ (exact for Gaussian x)
  double rank = 0;              ///< #{eigenvalues > 1e-6 max(1, λ_max)}/d
  double trace = 0;             ///< Tr S/d
  double objective = 0;         ///< the minimised objective / d²
  long iterations = 0, gradient_evaluations = 0;
  bool converged = false;
  double wall_seconds = 0;
  std::string message;
};

/// Fill mse, train_loss, test_error, rank, trace, eigenvalues from S.
void measure_sensing(const SensingData& data, ErmResult& r);

/// The factorised objective (Σ (y − Tr Z S)² + λ |W|²)/d², S = W Wᵀ/√(pd), λ = λ̃ √(d/p), and its
/// gradient with respect to W (d × p).
double factorized_objective(const SensingData& data, double lambda_tilde, const Eigen::MatrixXd& W, Eigen::MatrixXd* grad);

/// Factorised training shared by every channel: S = W Wᵀ/√(p d) with p = round(width · d) columns,
/// W started from N(0, 1/4) entries (away from the saddle at W = 0) and minimised by L-BFGS.
/// `objective(W, grad)` returns the objective and writes its gradient in W.
struct FactorizedFit {
  Eigen::MatrixXd S;
  LbfgsSummary summary;
};
FactorizedFit fit_factorized(int d, const ErmOptions& opt,
                             const std::function<double(const Eigen::MatrixXd& W, Eigen::MatrixXd* grad)>& objective);

ErmResult train_convex(const SensingData& data, double lambda_tilde, const ErmOptions& opt = {});
ErmResult train_factorized(const SensingData& data, double lambda_tilde, const ErmOptions& opt = {});
ErmResult train_direct(const SensingData& data, double lambda_frobenius, const ErmOptions& opt = {});

/// The proximal map of tau Tr S on S >= 0: the eigenvalues of sym(M) soft-thresholded at tau.
Eigen::MatrixXd psd_soft_threshold(const Eigen::MatrixXd& M, double tau);

}  // namespace hdat::tied_attention
