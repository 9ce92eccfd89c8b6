// Every claim of the paper, end to end, as `hdat analyze polarization --set claim=NAME` runs it
// (label `thorough`: about 10 s in Release; tools/thorough.sh).
#include <doctest/doctest.h>

#include "../helpers.hpp"
#include "hdat/polarization/claims.hpp"

using namespace hdat;
using namespace hdat::polarization;

TEST_CASE("every claim reproduces with the spec's setups") {
  for (const std::string claim : {"order", "polarization", "square", "regression", "normalizations", "tied", "sign"}) {
    CAPTURE(claim);
    const ClaimResult r = run_claim(claim, test_pol::params({{"claim", claim}}));
    for (const ClaimCheck& k : r.checks) {
      CAPTURE(k.name);
      CAPTURE(k.measured);
      CHECK(k.pass);
    }
    CHECK(r.all_pass);
  }
}
