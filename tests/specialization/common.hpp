#pragma once
#include <string>
#include <vector>

#include "hdat/core/params.hpp"
#include "hdat/specialization/model.hpp"

namespace spec_test {
// Resolved parameters of the specialization model from "key=value" strings.
inline hdat::Params params(const std::vector<std::string>& sets) {
  std::vector<std::pair<std::string, hdat::json>> a;
  for (const auto& s : sets) a.push_back(hdat::parse_assignment(s));
  hdat::Params p = hdat::resolve(hdat::specialization::parameters(), {}, a);
  hdat::specialization::check(p);
  return p;
}
}  // namespace spec_test
