#pragma once
// Values that stand for "undefined" and "unbounded" (NaN is an empty CSV cell and null in JSON).
#include <limits>

namespace hdat {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace hdat
