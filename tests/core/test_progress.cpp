#include <doctest/doctest.h>

#include <cmath>

#include "hdat/core/progress.hpp"

using namespace hdat;

TEST_CASE("the remaining time follows a change of pace within seconds (the smoothed rate), not the mean over the past") {
  // 100 units: 10 per second for 5 s, then 2 per second (a slower stage). Updates every 0.25 s.
  SmoothedRate rate;
  double done = 0, t = 0;
  for (; t < 5 - 1e-9;) t += 0.25, done += 2.5, rate.add(t, done);
  CHECK(rate.rate() == doctest::Approx(10));
  CHECK(rate.remaining(100) == doctest::Approx(5));
  for (int k = 0; k < 60; ++k) t += 0.25, done += 0.5, rate.add(t, done);  // 15 s at the slow pace: 80 units done
  // The truth now: 20 units left at 2 per second = 10 s. The mean rate so far (80 / 20 s) would say 5 s.
  CHECK(std::fabs(rate.remaining(100) - 10) < 0.5);
  CHECK(std::isnan(SmoothedRate().remaining(100)));
}
