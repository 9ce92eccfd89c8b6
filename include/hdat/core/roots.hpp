#pragma once
// A root of f in [lo, hi] given f(lo) and f(hi) of opposite signs: Boost.Math's TOMS 748 to `bits`
// bits of the bracket (at most 200 evaluations), the bracket's midpoint returned.
#include <boost/math/tools/toms748_solve.hpp>
#include <cstdint>

namespace hdat {

template <class F>
double toms748_root(F f, double lo, double hi, double flo, double fhi, int bits = 48) {
  std::uintmax_t iterations = 200;
  const auto r = boost::math::tools::toms748_solve(f, lo, hi, flo, fhi, boost::math::tools::eps_tolerance<double>(bits), iterations);
  return 0.5 * (r.first + r.second);
}

}  // namespace hdat
