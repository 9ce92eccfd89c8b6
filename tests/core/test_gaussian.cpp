#include <doctest/doctest.h>

#include <cmath>

#include "hdat/core/gaussian.hpp"

using namespace hdat;

namespace {
// f(z) = (z0^2, exp(z1), z0 z1 + z2^4): means 1, e^{1/2}, 3.
struct Moments {
  void operator()(const double* z, double* out) const {
    out[0] = z[0] * z[0];
    out[1] = std::exp(z[1]);
    out[2] = z[0] * z[1] + std::pow(z[2], 4);
  }
};
}  // namespace

TEST_CASE("expectations match closed forms within a few standard errors (MC and Sobol)") {
  const double exact[3] = {1.0, std::exp(0.5), 3.0};
  for (Sampling kind : {Sampling::monte_carlo, Sampling::sobol}) {
    CAPTURE(sampling_name(kind));
    GaussianSampleSet set(1 << 16, 3, 42, kind, 16);
    auto est = expectation(set, Moments{}, 3, true);
    for (int k = 0; k < 3; ++k) {
      CAPTURE(k);
      CHECK(est.se(k) > 0);
      CHECK(std::fabs(est.mean(k) - exact[k]) < 4.5 * est.se(k));
    }
  }
}

TEST_CASE("the standard error agrees with the spread over independent sample sets") {
  for (Sampling kind : {Sampling::monte_carlo, Sampling::sobol}) {
    CAPTURE(sampling_name(kind));
    const int sets = 40;
    std::vector<double> means;
    double se_avg = 0;
    for (int s = 0; s < sets; ++s) {
      GaussianSampleSet set(4096, 3, 1000 + s, kind, 16);
      auto est = expectation(set, Moments{}, 3, true);
      means.push_back(est.mean(1));
      se_avg += est.se(1) / sets;
    }
    double mu = 0, var = 0;
    for (double m : means) mu += m / sets;
    for (double m : means) var += (m - mu) * (m - mu) / (sets - 1);
    const double spread = std::sqrt(var);
    // The ratio of two noisy scale estimates from 40 sets: within a factor 1.6 either way.
    CHECK(se_avg / spread > 1 / 1.6);
    CHECK(se_avg / spread < 1.6);
  }
}

TEST_CASE("results are bit-identical for any number of threads") {
  GaussianSampleSet set(20000, 3, 7, Sampling::monte_carlo);
  auto a = expectation(set, Moments{}, 3, true, 1);
  auto b = expectation(set, Moments{}, 3, true, 2);
  auto c = expectation(set, Moments{}, 3, true, 3);
  for (int k = 0; k < 3; ++k) {
    CHECK(a.mean(k) == b.mean(k));
    CHECK(a.mean(k) == c.mean(k));
    CHECK(a.se(k) == c.se(k));
  }
}

TEST_CASE("Sobol sampling beats Monte Carlo on a smooth integrand") {
  GaussianSampleSet mc(1 << 14, 3, 3, Sampling::monte_carlo);
  GaussianSampleSet qmc(1 << 14, 3, 3, Sampling::sobol, 16);
  auto a = expectation(mc, Moments{}, 3, true);
  auto b = expectation(qmc, Moments{}, 3, true);
  CHECK(b.se(0) < a.se(0));
  CHECK(b.se(1) < a.se(1));
}

TEST_CASE("block expectations: one column per block, their mean the expectation; kernels may take the sample index") {
  for (Sampling kind : {Sampling::monte_carlo, Sampling::sobol}) {
    CAPTURE(sampling_name(kind));
    const int blocks = 8;
    GaussianSampleSet set(1 << 14, 3, 7, kind, blocks);
    const Eigen::MatrixXd by_block = block_expectations(set, Moments{}, 3, blocks);
    REQUIRE(by_block.cols() == blocks);
    const auto est = expectation(set, Moments{}, 3);
    CHECK((by_block.rowwise().mean() - est.mean).cwiseAbs().maxCoeff() < 1e-12);
    // The index a kernel sees is the sample's own: block b holds samples [b n/B, (b+1) n/B).
    const auto index_kernel = [](long i, const double*, double* out) { out[0] = static_cast<double>(i); };
    const Eigen::MatrixXd idx = block_expectations(set, index_kernel, 1, blocks);
    const double per = static_cast<double>(set.size() / blocks);
    for (int b = 0; b < blocks; ++b) CHECK(idx(0, b) == doctest::Approx(b * per + (per - 1) / 2));
    // Bit-identical for any number of threads.
    CHECK((block_expectations(set, Moments{}, 3, blocks, 1) - block_expectations(set, Moments{}, 3, blocks, 2)).cwiseAbs().maxCoeff() == 0.0);
  }
  GaussianSampleSet sobol(1 << 12, 2, 1, Sampling::sobol, 4);
  CHECK_THROWS_AS(block_expectations(sobol, Moments{}, 3, 8), std::invalid_argument);  // a block must be a whole shift
}
