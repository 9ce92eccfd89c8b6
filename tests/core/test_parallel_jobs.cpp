// for_each_job: every job runs once whatever the thread count, a job's exception reaches the caller
// (it must not escape the OpenMP region and terminate the program), and an interrupt stops the batch.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "hdat/core/error.hpp"
#include "hdat/core/parallel_jobs.hpp"
#include "hdat/core/progress.hpp"

using namespace hdat;

TEST_CASE("for_each_job runs every job exactly once, for 1 and 2 threads") {
  for (int threads : {1, 2}) {
    use_threads(threads);
    std::vector<int> runs(37, 0);
    Progress progress("jobs", 37, false);
    for_each_job(runs.size(), [&](std::size_t k) { runs[k] += static_cast<int>(k) + 1; }, &progress);
    for (std::size_t k = 0; k < runs.size(); ++k) CHECK(runs[k] == static_cast<int>(k) + 1);
    CHECK(progress.done() == 37);
  }
}

TEST_CASE("for_each_job rethrows a job's exception on the caller and starts no job after it") {
  use_threads(1);  // one thread: the order is the given one, so "after" is well defined
  std::atomic<int> started{0};
  auto job = [&](std::size_t k) {
    ++started;
    if (k == 3) throw InputError("d", "must be positive");
  };
  CHECK_THROWS_AS(for_each_job(10, job), InputError);
  CHECK(started == 4);
}

TEST_CASE("for_each_job stops on an interrupt and says so") {
  use_threads(1);
  std::atomic<int> started{0};
  auto job = [&](std::size_t k) {
    ++started;
    if (k == 1) request_interrupt();
  };
  CHECK_THROWS_AS(for_each_job(10, job), Interrupted);
  clear_interrupt();
  CHECK(started == 2);
}
