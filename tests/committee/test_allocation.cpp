// The hot paths allocate nothing: the ODE's right-hand side (after the first call on a thread) and
// the simulator's SGD step. malloc is interposed in this test executable (glibc's __libc_malloc
// underneath) and counted while a probe is armed; operator new, Eigen and libgomp all go through it.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>

#include "common.hpp"
#include "hdat/committee/ode.hpp"
#include "hdat/committee/simulator.hpp"

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
}

namespace {
std::atomic<bool> armed{false};
std::atomic<long> allocations{0};
}  // namespace

extern "C" {
void* malloc(std::size_t n) {
  if (armed.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t m) {
  if (armed.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, m);
}
void* realloc(void* p, std::size_t n) {
  if (armed.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
}

namespace {
template <class F>
long count_allocations(F&& f) {
  allocations = 0;
  armed = true;
  f();
  armed = false;
  return allocations.load();
}
}  // namespace

using namespace hdat;
using namespace hdat::committee;

TEST_CASE("the probe sees allocations") {
  CHECK(count_allocations([] { Eigen::VectorXd v(1000); v.setZero(); }) >= 1);
}

TEST_CASE("the right-hand side allocates nothing after its first call (erf and linear, serial and parallel)") {
  for (auto [K, threads] : std::vector<std::pair<int, int>>{{2, 1}, {5, 1}, {16, 2}})
    for (Activation g : {Activation::erf, Activation::linear}) {
      Config s = committee_test::setup(K, K, g);
      s.train_v = true;
      s.noise = 0.1;
      s.wd = 0.01;
      const CommitteeODE ode(s, threads);
      const Eigen::VectorXd x = pack(s, committee_test::random_overlaps(s, 1));
      Eigen::VectorXd dx(x.size());
      ode(x, dx, 0.0);  // first call: the thread-local workspaces
      ode(x, dx, 0.0);
      CAPTURE(K);
      CAPTURE(activation_name(g));
      CHECK(count_allocations([&] {
              for (int r = 0; r < 20; ++r) ode(x, dx, 0.0);
            }) == 0);
    }
}

TEST_CASE("an SGD step allocates nothing") {
  for (bool train_v : {false, true}) {
    Config s = committee_test::setup(3, 2);
    s.train_v = train_v;
    s.wd = 0.01;
    s.noise = 0.2;
    OnlineSGD sgd(s, 500, 1, 0, 0);
    sgd.step();
    CAPTURE(train_v);
    CHECK(count_allocations([&] {
            for (int r = 0; r < 1000; ++r) sgd.step();
          }) == 0);
    // increment() (the drift check, not a hot path) builds its terms: the probe sees it.
    CHECK(count_allocations([&] { sgd.increment(); }) > 0);
  }
}
