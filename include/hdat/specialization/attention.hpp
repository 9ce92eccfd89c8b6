#pragma once
// Multi-head attention of the single-location model, for ONE sequence: token weights w(χ) and the
// two contractions of their Jacobian J_{ℓ',hℓ} = ∂w_ℓ'/∂χ_hℓ that theory and simulator need.
// This file is the shared core of both: the ODE averages these quantities over the Gaussian local
// fields, the simulator evaluates them on actual tokens. Notation as in derivation.md.
//
// Every activation has the form J_{:,hℓ} = c_h a_hℓ (e_ℓ − m_h):
//   softmax / softmax1 : a_h = per-head (soft)max of χ_{:,h},   m_h = a_h, c_h = 1/H (mean) or 1 (sum)
//   bayes              : a = one softmax over heads × tokens,    m_h = w,   c_h = 1
// so that
//   (r·J)_{hℓ}             = c_h a_hℓ (r_ℓ − r·m_h)                        (vector-Jacobian product)
//   J_{:,hℓ}·J_{:,h'ℓ}     = c_h c_h' a_hℓ a_h'ℓ (1 − m_hℓ − m_h'ℓ + m_h·m_h')
// A per-head logit offset o_h (logits χ_hℓ + o_h) leaves these formulas as they are, and since it
// shifts every logit of head h, ∂w/∂o_h = Σ_ℓ J_{:,hℓ} = c_h (a_h − (Σ_ℓ a_hℓ) m_h): zero for softmax
// (the offset cancels), c_h (1 − A_h) a_h for softmax1 with A_h = Σ_ℓ a_hℓ its total weight.
#include <Eigen/Dense>
#include <cmath>
#include <type_traits>

namespace hdat::specialization {

/// The value of a scalar: itself for double, the value part of a dual number (whose derivatives
/// the attention's code carries for the exact Jacobians of hdat optimize).
template <class S>
double value_of(const S& x) {
  if constexpr (std::is_arithmetic_v<S>)
    return x;
  else
    return x.value();
}

enum class Activation { softmax, softmax1, bayes };
enum class Aggregation { mean, sum };

struct Attention {
  Activation activation = Activation::softmax;
  Aggregation aggregation = Aggregation::mean;
  int L = 0, H = 0;
  Eigen::VectorXd head_weight;  ///< c_h
  Eigen::VectorXd logit_offset; ///< o_h, added to every logit of head h (Config::logit_offset; set per state / per step)

  Attention() = default;
  Attention(Activation act, Aggregation agg, int tokens, int heads)
      : activation(act), aggregation(agg), L(tokens), H(heads),
        head_weight(Eigen::VectorXd::Constant(heads, (act != Activation::bayes && agg == Aggregation::mean) ? 1.0 / heads : 1.0)),
        logit_offset(Eigen::VectorXd::Zero(heads)) {}

  /// chi: L x H fields. Writes a (L x H, the per-head or joint attention weights), w (L), and
  /// m (L x H, the centring vector of each head's Jacobian).
  template <class Chi, class A, class W, class Mm>
  void forward(const Chi& chi, A& a, W& w, Mm& m) const {
    forward(chi, logit_offset, a, w, m);
  }

  /// The same with the logit offsets given (of the scalar type of `a`: double, or a dual number
  /// whose derivatives follow the offsets' dependence on the state).
  template <class Chi, class Offset, class A, class W, class Mm>
  void forward(const Chi& chi, const Offset& offset, A& a, W& w, Mm& m) const {
    using S = typename A::Scalar;
    using std::exp;
    if (activation == Activation::bayes) {
      // One normalisation over heads x tokens (log-sum-exp with the global maximum).
      double top = -INFINITY;
      for (int h = 0; h < H; ++h)
        for (int l = 0; l < L; ++l) top = std::max(top, value_of(chi(l, h) + offset(h)));
      S z = S(0.0);
      for (int h = 0; h < H; ++h)
        for (int l = 0; l < L; ++l) z += (a(l, h) = exp(chi(l, h) + offset(h) - top));
      a /= z;
      w = a.rowwise().sum();
      for (int h = 0; h < H; ++h) m.col(h) = w;
      return;
    }
    // Per head, logits χ_hℓ + o_h (softmax1: against the fixed zero logit; log-sum-exp with the maximum).
    const bool extra_zero_logit = activation == Activation::softmax1;
    for (int h = 0; h < H; ++h) {
      const S o = offset(h);
      double top = extra_zero_logit ? 0.0 : -INFINITY;
      for (int l = 0; l < L; ++l) top = std::max(top, value_of(chi(l, h) + o));
      S z = extra_zero_logit ? S(std::exp(-top)) : S(0.0);
      for (int l = 0; l < L; ++l) z += (a(l, h) = exp(chi(l, h) + o - top));
      a.col(h) /= z;
    }
    m = a;
    if constexpr (std::is_same_v<S, double>)
      w = a * head_weight;
    else
      w = a * head_weight.template cast<S>();
  }

  /// G_hℓ = Σ_ℓ' r_ℓ' J_{ℓ',hℓ} = c_h a_hℓ (r_ℓ − r·m_h).
  template <class A, class Mm, class R, class Out>
  void vjp(const A& a, const Mm& m, const R& r, Out& G) const {
    using S = typename Out::Scalar;
    for (int h = 0; h < H; ++h) {
      const S rm = r.dot(m.col(h));
      for (int l = 0; l < L; ++l) G(l, h) = head_weight(h) * a(l, h) * (r(l) - rm);
    }
  }

  /// JJ(h, h') summed against per-token factors: returns Σ_ℓ f_ℓ J_{:,hℓ}·J_{:,h'ℓ} into out (H x H).
  /// Uses the Gram matrix mm = mᵀm of the centring vectors.
  template <class A, class Mm, class MM, class F, class Out>
  void jacobian_gram(const A& a, const Mm& m, const MM& mm, const F& factor, Out& out) const {
    using S = typename Out::Scalar;
    for (int h = 0; h < H; ++h)
      for (int k = h; k < H; ++k) {
        S s = S(0.0);
        for (int l = 0; l < L; ++l) s += a(l, h) * a(l, k) * (1.0 - m(l, h) - m(l, k) + mm(h, k));
        out(h, k) += factor * head_weight(h) * head_weight(k) * s;
        if (k != h) out(k, h) = out(h, k);
      }
  }
};

}  // namespace hdat::specialization
