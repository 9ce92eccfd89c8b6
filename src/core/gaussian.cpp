#include "hdat/core/gaussian.hpp"

#include <boost/math/distributions/normal.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/sobol.hpp>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <omp.h>

#include "hdat/core/error.hpp"
#include "hdat/core/random.hpp"

namespace hdat {

Sampling sampling_from_name(const std::string& name) {
  if (name == "mc" || name == "monte_carlo") return Sampling::monte_carlo;
  if (name == "sobol" || name == "qmc") return Sampling::sobol;
  throw InputError("sampling", "unknown sampling '" + name + "'; allowed: mc|sobol");
}

namespace detail {
void for_each_chunk(long n_chunks, int threads, const std::function<std::function<void(long)>()>& make_worker) {
  const int nt = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel num_threads(nt)
  {
    std::function<void(long)> work;
#pragma omp critical(hdat_make_worker)
    work = make_worker();
#pragma omp for schedule(static)
    for (long c = 0; c < n_chunks; ++c) work(c);
  }
}

Eigen::MatrixXd block_means_of(const Eigen::MatrixXd& sums, int blocks, long per_block) {
  const Eigen::Index chunks_per_block = sums.cols() / blocks;
  Eigen::MatrixXd means(sums.rows(), blocks);
  for (int b = 0; b < blocks; ++b)
    means.col(b) = sums.middleCols(b * chunks_per_block, chunks_per_block).rowwise().sum() / static_cast<double>(per_block);
  return means;
}
}  // namespace detail

std::string sampling_name(Sampling s) { return s == Sampling::sobol ? "sobol" : "mc"; }

GaussianSampleSet::GaussianSampleSet(long n, int dim, std::uint64_t seed, Sampling kind, int groups)
    : n_(n), dim_(dim), kind_(kind), groups_(std::max(1, groups)), seed_(seed) {
  if (n <= 0 || dim <= 0) throw std::invalid_argument("GaussianSampleSet: n and dim must be positive");
  if (kind == Sampling::monte_carlo) groups_ = 1;
  if (n_ < groups_) groups_ = 1;
  n_ = (n_ / groups_) * groups_;  // equal groups
  z_.resize(dim_, n_);
  auto eng = rng::engine(seed, 0, rng::theory_samples);
  if (kind == Sampling::monte_carlo) {
    boost::random::normal_distribution<double> normal;
    for (long i = 0; i < n_; ++i)
      for (int d = 0; d < dim_; ++d) z_(d, i) = normal(eng);
    return;
  }
  // Randomised QMC: one Sobol set (the origin skipped), `groups` independent uniform shifts mod 1.
  if (dim_ > 3667) throw InputError("mc_samples", "Sobol sampling supports at most 3667 dimensions");
  const long m = n_ / groups_;
  boost::random::sobol sob(static_cast<std::size_t>(dim_));
  sob.discard(static_cast<boost::uintmax_t>(dim_));  // skip the point at the origin
  Eigen::MatrixXd u(dim_, m);
  const double scale = 1.0 / (static_cast<double>(sob.max()) + 1.0);
  for (long i = 0; i < m; ++i)
    for (int d = 0; d < dim_; ++d) u(d, i) = (static_cast<double>(sob()) + 0.5) * scale;
  boost::random::uniform_01<double> unif;
  const boost::math::normal_distribution<double> gauss;
  for (int g = 0; g < groups_; ++g) {
    Eigen::VectorXd shift(dim_);
    for (int d = 0; d < dim_; ++d) shift(d) = unif(eng);
    for (long i = 0; i < m; ++i)
      for (int d = 0; d < dim_; ++d) {
        double v = u(d, i) + shift(d);
        v -= std::floor(v);
        v = std::clamp(v, 1e-300, 1.0 - 1e-16);
        z_(d, g * m + i) = boost::math::quantile(gauss, v);
      }
  }
}

}  // namespace hdat
