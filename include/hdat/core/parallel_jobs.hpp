#pragma once
// Independent jobs (fits, AMP runs, simulations at one point each) run in parallel: the one loop every
// harness uses. Each job writes only its own result slot, so what is computed does not depend on the
// number of threads; jobs are taken one at a time in the order given (put the largest first for load
// balance). OpenMP stays in src/core.
#include <cstddef>
#include <functional>

namespace hdat {

class Progress;

/// The threads for_each_job (and every OpenMP loop after it) uses: `threads` > 0 sets them (the
/// command line's --threads), 0 leaves them as they are.
void use_threads(int threads);

/// Runs job(k) for k = 0 … count − 1 on the OpenMP threads as set (omp_set_num_threads), advancing
/// `progress` (if given) after each job and finishing it at the end.
/// - Interrupted (interrupted() turns true): no new job starts; once the running ones have ended,
///   Interrupted is thrown.
/// - A job that throws: no new job starts; once the running ones have ended, the first exception is
///   rethrown on the calling thread (an exception must not escape an OpenMP region).
void for_each_job(std::size_t count, const std::function<void(std::size_t)>& job, Progress* progress = nullptr);

}  // namespace hdat
