#pragma once
// Shared helpers of the polarization tests: a configuration from key=value pairs, as the CLI builds it.
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "hdat/core/params.hpp"
#include "hdat/polarization/model.hpp"

namespace test_pol {

inline hdat::Params params(const std::vector<std::pair<std::string, nlohmann::json>>& sets) {
  hdat::Params p = hdat::resolve(hdat::polarization::parameters(), nullptr, sets);
  hdat::polarization::check(p);
  return p;
}

inline hdat::polarization::Config config(const std::vector<std::pair<std::string, nlohmann::json>>& sets) {
  return hdat::polarization::Config::from(params(sets));
}

}  // namespace test_pol
