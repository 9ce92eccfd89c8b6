#pragma once
// The grid of a parameter sweep: axes given as `key=start:stop:count[:log]` or `key=[a,b,c]`, their
// cartesian product, and the points it yields. A point is the model's resolved Params with the grid
// values applied through Params::with and the model's own consistency check, so a swept key is
// checked exactly as on a single run; a point's identity is a hash of everything that determines its
// result (model, command, every resolved parameter).
#include <cstdint>
#include <string>
#include <vector>

#include "hdat/core/registry.hpp"

namespace hdat::sweep {

struct Axis {
  std::string key;
  std::string spec;                 ///< the text after '=' as given
  std::vector<nlohmann::json> values;  ///< canonical values (as check_value returns them)
  bool log = false;                 ///< log-spaced (plots use a log axis)
  bool numeric = false;             ///< every value is a number (a plot axis); otherwise categorical
  nlohmann::json to_json() const;
};

/// Parse one --grid argument against the model's declared keys. Integer keys on a start:stop:count
/// grid are rounded to the nearest integer (two grid values that round alike are an error); every
/// value is checked against the key's type and range. Throws InputError naming the key.
Axis parse_axis(const std::string& text, const ParamSet& set);

/// Split a list body "a, [1,2], 'x'" at its top-level commas (brackets and quotes respected).
std::vector<std::string> split_list(const std::string& body);

struct Point {
  std::size_t index = 0;            ///< position in the grid (first axis slowest)
  nlohmann::json overrides;         ///< swept key -> value
  Params params;                    ///< resolved, checked
  std::string hash;                 ///< 16 hex digits
};

/// Number of points of the cartesian product.
std::size_t grid_size(const std::vector<Axis>& axes);

/// Every point of the grid, resolved and checked (InputError naming the key and the grid point when
/// a combination is inconsistent, e.g. a list whose length must equal a swept H).
std::vector<Point> make_points(const ModelEntry& model, const std::string& command, const Params& base,
                               const std::vector<Axis>& axes);

/// The identity of a run: FNV-1a (64 bit) of model, command and the canonical JSON of every
/// resolved parameter, as 16 hex digits. Stable across machines, thread counts and runs.
std::string point_hash(const std::string& model, const std::string& command, const Params& params);

/// "H=2, prior.scale=0.5" for messages.
std::string describe(const nlohmann::json& overrides);

}  // namespace hdat::sweep
