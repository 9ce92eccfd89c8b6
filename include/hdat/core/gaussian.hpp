#pragma once
// Gaussian expectations on a FIXED sample set (common random numbers) or a randomised Sobol set, so
// that an expectation inside an ODE right-hand side is a smooth deterministic function of the state,
// and every expectation comes with a standard error.
//
//  - monte_carlo: n i.i.d. N(0, I_dim) vectors; the standard error is the sample standard deviation
//    over sqrt(n).
//  - sobol: `groups` independent random shifts (Cranley-Patterson, mod 1) of one Sobol point set of
//    n / groups points, mapped through the normal quantile; the standard error is the spread of the
//    group means over sqrt(groups) (randomised QMC).
//
// expectation() runs in parallel over fixed chunks and adds chunk sums in a fixed order: the result
// is bit-identical for any number of threads.
#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hdat {

enum class Sampling { monte_carlo, sobol };
Sampling sampling_from_name(const std::string& name);  // "mc" | "monte_carlo" | "sobol" | "qmc"
std::string sampling_name(Sampling s);

class GaussianSampleSet {
 public:
  GaussianSampleSet() = default;
  GaussianSampleSet(long n, int dim, std::uint64_t seed, Sampling kind = Sampling::monte_carlo, int groups = 16);

  long size() const { return n_; }
  int dim() const { return dim_; }
  Sampling kind() const { return kind_; }
  int groups() const { return groups_; }
  long group_size() const { return n_ / groups_; }
  std::uint64_t seed() const { return seed_; }
  /// Sample i as a contiguous array of dim() standard normals.
  const double* sample(long i) const { return z_.data() + i * dim_; }
  /// All samples, one per column (dim x n).
  const Eigen::MatrixXd& matrix() const { return z_; }

 private:
  long n_ = 0;
  int dim_ = 0;
  Sampling kind_ = Sampling::monte_carlo;
  int groups_ = 1;
  std::uint64_t seed_ = 0;
  Eigen::MatrixXd z_;
};

struct Estimate {
  Eigen::VectorXd mean;
  Eigen::VectorXd se;  ///< empty unless asked for
};

namespace detail {
inline constexpr long kChunk = 256;  // samples per chunk: the unit of work and of summation order
/// Calls work(c) for every chunk c in [0, n_chunks) on `threads` threads (<= 0: all cores), each
/// thread running the function that make_worker() built for it (so that it owns its scratch).
/// Compiled once in src/core (OpenMP stays out of the public headers).
void for_each_chunk(long n_chunks, int threads, const std::function<std::function<void(long)>()>& make_worker);
}  // namespace detail

/// E[f(z)] over the sample set. `kernel` is copied once per thread (so it may own scratch space) and
/// called as kernel(const double* z, double* out) to write the out_dim values of f at one sample.
/// threads <= 0: all cores.
template <class Kernel>
Estimate expectation(const GaussianSampleSet& set, const Kernel& kernel, int out_dim, bool with_se = false,
                     int threads = 0) {
  const long per_group = set.group_size();
  const long chunks_per_group = (per_group + detail::kChunk - 1) / detail::kChunk;
  const long n_chunks = chunks_per_group * set.groups();
  const bool rqmc = set.kind() == Sampling::sobol;
  Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(out_dim, n_chunks);
  Eigen::MatrixXd sqs = (with_se && !rqmc) ? Eigen::MatrixXd::Zero(out_dim, n_chunks) : Eigen::MatrixXd();
  detail::for_each_chunk(n_chunks, threads, [&]() -> std::function<void(long)> {
    auto k = std::make_shared<Kernel>(kernel);
    auto v = std::make_shared<Eigen::VectorXd>(out_dim);
    return [&, k, v](long c) {
      const long g = c / chunks_per_group, j = c % chunks_per_group;
      const long begin = g * per_group + j * detail::kChunk;
      const long end = std::min(begin + detail::kChunk, (g + 1) * per_group);
      for (long i = begin; i < end; ++i) {
        (*k)(set.sample(i), v->data());
        sums.col(c) += *v;
        if (with_se && !rqmc) sqs.col(c) += v->cwiseProduct(*v);
      }
    };
  });
  Estimate est;
  const long used = per_group * set.groups();
  est.mean = sums.rowwise().sum() / static_cast<double>(used);
  if (with_se) {
    if (rqmc) {
      Eigen::MatrixXd gm(out_dim, set.groups());
      for (int g = 0; g < set.groups(); ++g)
        gm.col(g) = sums.middleCols(g * chunks_per_group, chunks_per_group).rowwise().sum() / static_cast<double>(per_group);
      const int G = set.groups();
      Eigen::VectorXd var = ((gm.colwise() - est.mean).array().square().rowwise().sum() / std::max(1, G - 1)).matrix();
      est.se = (var.array() / G).sqrt().matrix();
    } else {
      Eigen::VectorXd ex2 = sqs.rowwise().sum() / static_cast<double>(used);
      Eigen::VectorXd var = (ex2 - est.mean.cwiseProduct(est.mean)).cwiseMax(0.0) * (static_cast<double>(used) / std::max<long>(1, used - 1));
      est.se = (var.array() / static_cast<double>(used)).sqrt().matrix();
    }
  }
  return est;
}

}  // namespace hdat
