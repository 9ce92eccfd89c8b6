#include "hdat/core/parallel_jobs.hpp"

#include <omp.h>

#include <atomic>
#include <exception>
#include <mutex>

#include "hdat/core/error.hpp"
#include "hdat/core/progress.hpp"

namespace hdat {

void use_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

void for_each_job(std::size_t count, const std::function<void(std::size_t)>& job, Progress* progress) {
  std::exception_ptr first_error;
  std::mutex error_mutex;
  std::atomic<bool> failed{false};
#pragma omp parallel for schedule(dynamic, 1)
  for (long k = 0; k < static_cast<long>(count); ++k) {
    if (interrupted() || failed.load()) continue;
    try {
      job(static_cast<std::size_t>(k));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      failed = true;
      continue;
    }
    if (progress) progress->advance();
  }
  if (progress) progress->finish();
  if (first_error) std::rethrow_exception(first_error);
  if (interrupted()) throw Interrupted("interrupted");
}

}  // namespace hdat
