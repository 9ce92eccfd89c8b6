#pragma once
// Helpers of the committee tests: setups and valid random states.
#include <boost/random/normal_distribution.hpp>

#include "hdat/committee/model.hpp"
#include "hdat/core/random.hpp"

namespace committee_test {

using hdat::committee::Activation;
using hdat::committee::Overlaps;
using hdat::committee::Config;

inline Config setup(int K, int M, Activation g = Activation::erf) {
  Config s = Config::defaults(K, M);
  s.activation = g;
  return s;
}

/// Overlaps of random weights in dimension D (so that C is a valid covariance): students
/// w_k = a_k w*_{k mod M} + b_k noise, with second layers v0 (and vstar) as in the setup.
inline Overlaps random_overlaps(const Config& s, std::uint64_t replica, int D = 40) {
  auto eng = hdat::rng::engine(77, replica, hdat::rng::user);
  boost::random::normal_distribution<double> normal;
  Eigen::MatrixXd W(s.K, D), Ws(s.M, D);
  for (int m = 0; m < s.M; ++m)
    for (int j = 0; j < D; ++j) Ws(m, j) = normal(eng);
  for (int k = 0; k < s.K; ++k)
    for (int j = 0; j < D; ++j) W(k, j) = 0.4 * Ws(k % s.M, j) + 0.8 * normal(eng);
  Overlaps o;
  o.Q = W * W.transpose() / D;
  o.R = W * Ws.transpose() / D;
  o.T = Ws * Ws.transpose() / D;
  o.v = s.v0;
  return o;
}

}  // namespace committee_test
