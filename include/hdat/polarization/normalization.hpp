#pragma once
// The maps a -> s = σ(a) of the spec and their vector-Jacobian products (derivation.md §4).
//
// Normalised maps σ_i = f(a_i) / F, F = Σ_j f(a_j):
//   softmax f = exp, square f = x², sum f = x, l1 f = |x|, relu f = max(x, 0);
// element-wise maps (no normalisation): sigmoid, elementwise_relu.
// For a normalised map (Jᵀ g)_k = f'(a_k)/F (g_k − <g, σ>); for softmax f'(a_k)/F = σ_k, so
// Jᵀ g = C(s) g = s ⊙ (g − s·g), evaluated without forming C(s).
#include <Eigen/Dense>

#include "hdat/polarization/model.hpp"

namespace hdat::polarization {

using ConstVec = Eigen::Ref<const Eigen::VectorXd>;
using Vec = Eigen::Ref<Eigen::VectorXd>;

/// σ_i = f(a_i)/Σ f(a_j) (true) or element-wise (false).
bool is_normalised(Normalization n);
/// Invariant of the flow that follows from a symmetry of σ (derivation.md §5):
/// softmax is shift invariant -> mean(a) is conserved; square, sum, l1, relu are scale invariant
/// -> |a|² is conserved; element-wise maps have neither.
enum class Invariant { mean_a, norm2_a, none };
Invariant invariant_of(Normalization n);

/// s = σ(a). Returns the normaliser F = Σ f(a_j) (softmax: the log-sum-exp log Σ e^{a_j};
/// element-wise maps: 1). Softmax is evaluated as exp(a_i − lse(a)).
double weights(Normalization n, const ConstVec& a, Vec s);

/// out = Jᵀ g with J = ∂σ/∂a at a, given s = σ(a) and F from weights(). For normalised maps the
/// centring g − <g, σ> is computed around g at the heaviest weight, which keeps the small
/// differences u_i − z accurate when one weight is close to 1.
void vjp(Normalization n, const ConstVec& a, const ConstVec& s, double F, const ConstVec& g, Vec out);

/// Index of the largest weight (ties: the first).
int top_index(const ConstVec& s);

/// Σ_{j ≠ top} s_j: 1 − s_top for normalised maps, without the cancellation of 1 − s_top.
double one_minus_top(Normalization n, const ConstVec& s, int top);

/// Entropy of the weights (normalised to sum 1 for the element-wise maps); NaN when some weight
/// is negative (sum normalisation outside the simplex). Softmax uses log s_i = a_i − lse(a).
double entropy(Normalization n, const ConstVec& a, const ConstVec& s);

/// Stable scalar helpers: softplus(x) = log(1 + e^x), logistic(x) = 1/(1 + e^{−x}).
double softplus(double x);
double logistic(double x);
double log_sum_exp(const ConstVec& a);

}  // namespace hdat::polarization
