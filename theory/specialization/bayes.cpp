#include "hdat/specialization/bayes.hpp"

#include <cmath>

#include "hdat/core/random.hpp"

namespace hdat::specialization {

namespace {
double log_cosh(double x) {
  const double ax = std::fabs(x);
  return ax + std::log1p(std::exp(-2.0 * ax)) - std::log(2.0);
}
}  // namespace

double log_location_weight(const Prior& prior, const Eigen::Ref<const Eigen::VectorXd>& lambda) {
  switch (prior.kind) {
    case Prior::Kind::gaussian: {
      // ∫ N(θ; μ, diag σ²) exp(θ·λ − |θ|²/2) dθ ∝ exp(Σ_f [μ_f λ_f + σ_f² λ_f² / 2] / (1 + σ_f²)) (λ-free factors dropped).
      double s = 0;
      for (Eigen::Index f = 0; f < lambda.size(); ++f) {
        const double v = prior.std(f) * prior.std(f);
        s += (prior.mean(f) * lambda(f) + 0.5 * v * lambda(f) * lambda(f)) / (1.0 + v);
      }
      return s;
    }
    case Prior::Kind::discrete: {
      double top = -INFINITY;
      Eigen::VectorXd lw(prior.points.rows());
      for (Eigen::Index k = 0; k < prior.points.rows(); ++k) {
        const Eigen::VectorXd th = prior.points.row(k).transpose();
        lw(k) = std::log(prior.probs(k)) + th.dot(lambda) - 0.5 * th.squaredNorm();
        top = std::max(top, lw(k));
      }
      return top + std::log((lw.array() - top).exp().sum());
    }
    case Prior::Kind::signs: {
      // E over independent signs: Π_f cosh(a_f λ_f) e^{−a_f²/2}.
      double s = 0;
      for (Eigen::Index f = 0; f < lambda.size(); ++f) s += log_cosh(prior.amplitudes(f) * lambda(f));
      return s;
    }
  }
  return 0;
}

std::pair<double, double> bayes_risk(const Config& s, long samples, Sampling sampling, std::uint64_t seed, int threads) {
  const int L = s.L, F = s.F;
  const bool discrete = s.prior.kind == Prior::Kind::discrete;
  const int dim = F * L + (discrete ? 0 : F);
  GaussianSampleSet set(samples, dim, rng::stream_seed(seed, 0, rng::bayes_samples), sampling, 16);
  struct Kernel {
    const Config* s;
    bool discrete;
    void operator()(const double* z, double* out) const {
      const int L = s->L, F = s->F;
      const Prior& pr = s->prior;
      const int K = discrete ? static_cast<int>(pr.points.rows()) : 1;
      Eigen::VectorXd theta(F), lw(L), lam(F);
      double acc = 0;
      for (int k = 0; k < K; ++k) {
        double wk = 1.0;
        if (discrete) {
          theta = pr.points.row(k).transpose();
          wk = pr.probs(k);
        } else {
          pr.from_normals(z + F * L, theta);
        }
        for (int l = 0; l < L; ++l) {
          for (int f = 0; f < F; ++f) lam(f) = z[l * F + f] + (l == 0 ? theta(f) : 0.0);
          lw(l) = log_location_weight(pr, lam);
        }
        const double top = lw.maxCoeff();
        const Eigen::ArrayXd p = (lw.array() - top).exp();
        acc += wk * (p.square().sum() / (p.sum() * p.sum()));
      }
      out[0] = 0.5 * (s->noise * s->noise + 1.0 - acc);
    }
  };
  const Estimate e = expectation(set, Kernel{&s, discrete}, 1, true, threads);
  return {e.mean(0), e.se(0)};
}

}  // namespace hdat::specialization
