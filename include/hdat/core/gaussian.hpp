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
#include <stdexcept>
#include <string>
#include <type_traits>
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

namespace detail {
/// Calls the kernel at sample i: kernel(i, z, out) where it takes the sample's index (a kernel that
/// keeps per-sample state, like a warm start), else kernel(z, out).
template <class Kernel>
void call_kernel(Kernel& kernel, long i, const double* z, double* out) {
  if constexpr (std::is_invocable_v<Kernel&, long, const double*, double*>) kernel(i, z, out);
  else kernel(z, out);
}

/// The sums of f over fixed chunks of `blocks` equal consecutive blocks of the set (chunks never
/// straddle a block), one column per chunk; with `squares`, the sums of f² too.
template <class Kernel>
Eigen::MatrixXd chunk_sums(const GaussianSampleSet& set, const Kernel& kernel, int out_dim, int blocks, int threads,
                           Eigen::MatrixXd* squares = nullptr) {
  const long per_block = set.size() / blocks;
  const long chunks_per_block = (per_block + kChunk - 1) / kChunk;
  const long n_chunks = chunks_per_block * blocks;
  Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(out_dim, n_chunks);
  if (squares) *squares = Eigen::MatrixXd::Zero(out_dim, n_chunks);
  for_each_chunk(n_chunks, threads, [&]() -> std::function<void(long)> {
    auto k = std::make_shared<Kernel>(kernel);
    auto v = std::make_shared<Eigen::VectorXd>(out_dim);
    return [&, k, v](long c) {
      const long b = c / chunks_per_block, j = c % chunks_per_block;
      const long begin = b * per_block + j * kChunk;
      const long end = std::min(begin + kChunk, (b + 1) * per_block);
      for (long i = begin; i < end; ++i) {
        call_kernel(*k, i, set.sample(i), v->data());
        sums.col(c) += *v;
        if (squares) squares->col(c) += v->cwiseProduct(*v);
      }
    };
  });
  return sums;
}

/// Means of the chunk sums per block (blocks x chunks_per_block columns, in order).
Eigen::MatrixXd block_means_of(const Eigen::MatrixXd& sums, int blocks, long per_block);
}  // namespace detail

/// E[f(z)] over the sample set. `kernel` is copied once per thread (so it may own scratch space) and
/// called as kernel(const double* z, double* out), or kernel(long i, const double* z, double* out)
/// with the sample's index, to write the out_dim values of f at one sample. threads <= 0: all cores.
template <class Kernel>
Estimate expectation(const GaussianSampleSet& set, const Kernel& kernel, int out_dim, bool with_se = false,
                     int threads = 0) {
  const bool rqmc = set.kind() == Sampling::sobol;
  Eigen::MatrixXd sqs;
  const Eigen::MatrixXd sums = detail::chunk_sums(set, kernel, out_dim, set.groups(), threads, (with_se && !rqmc) ? &sqs : nullptr);
  Estimate est;
  const long used = set.group_size() * set.groups();
  est.mean = sums.rowwise().sum() / static_cast<double>(used);
  if (with_se) {
    if (rqmc) {
      const Eigen::MatrixXd gm = detail::block_means_of(sums, set.groups(), set.group_size());
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

/// E[f(z)] on each of `blocks` consecutive equal blocks of the set: one column of means per block
/// (blocks must divide a Sobol set into its random shifts, i.e. equal set.groups(); a Monte Carlo
/// set may be cut into any number of blocks of i.i.d. samples). This is what a NONLINEAR function of
/// several expectations needs for its standard error: the spread of the function over the blocks.
/// Bit-identical for any thread count, like expectation().
template <class Kernel>
Eigen::MatrixXd block_expectations(const GaussianSampleSet& set, const Kernel& kernel, int out_dim, int blocks, int threads = 0) {
  if (blocks < 1 || set.size() % blocks != 0 || (set.kind() == Sampling::sobol && blocks != set.groups()))
    throw std::invalid_argument("block_expectations: blocks must split the sample set into its groups");
  return detail::block_means_of(detail::chunk_sums(set, kernel, out_dim, blocks, threads), blocks, set.size() / blocks);
}

}  // namespace hdat
