// Observables: each reduction checked on tables whose answer is known in closed form.
#include <doctest/doctest.h>

#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/sweep/observable.hpp"

using namespace hdat;
using namespace hdat::sweep;

namespace {

// y = 3 - 2 t on t = 0, 1, 2, 3 (crosses 0 at t = 1.5), z = (t - 2)^2 (minimum 0 at t = 2).
std::map<std::string, Table> tables() {
  Table c({"t", "y", "z", "label"});
  for (int i = 0; i <= 3; ++i) c.add_row({static_cast<double>(i), 3.0 - 2.0 * i, (i - 2.0) * (i - 2.0), std::string("x")});
  Table other({"kept_heads", "risk"});
  other.add_row({2.0, 0.1});
  other.add_row({1.0, 0.4});
  return {{"curve.csv", c}, {"prune.csv", other}};
}

const nlohmann::json info = {{"events", {{"plateau_end", 4.5}, {"never", nullptr}}},
                             {"final", {{"M", {{0.1, 0.2}, {0.3, 0.4}}}}},
                             {"bayes_risk", 0.25},
                             {"agree", true},
                             {"dotted.key", 7.0},
                             {"observables", {{"sink_share", 0.5}}}};

double ev(const std::string& spec) { return evaluate(parse_observable(spec), "curve", tables(), info); }

}  // namespace

TEST_CASE("reductions of the main table") {
  CHECK(ev("final:y") == -3.0);
  CHECK(ev("last:y") == -3.0);
  CHECK(ev("min:y") == -3.0);
  CHECK(ev("max:y") == 3.0);
  CHECK(ev("argmin:z") == 2.0);
  CHECK(ev("argmax:z") == 0.0);  // first of the maxima: z(0) = 4 > z(3) = 1
  CHECK(ev("at:1.25:y") == doctest::Approx(0.5).epsilon(1e-15));  // linear data: interpolation is exact
  CHECK(ev("at:2:z") == 0.0);
  CHECK(std::isnan(ev("at:3.5:y")));   // outside the range: NaN, not an extrapolation
  CHECK(ev("cross:y:0") == doctest::Approx(1.5).epsilon(1e-15));
  CHECK(ev("cross:z:2.5") == doctest::Approx(0.5).epsilon(1e-15));  // z falls from 4 to 1 on [0, 1]
  CHECK(std::isnan(ev("cross:y:10")));
  CHECK(std::isnan(ev("final:nothing")));
  CHECK(std::isnan(ev("final:label")));  // a text column has no number
}

TEST_CASE("info paths, other tables, bare names") {
  CHECK(ev("info:events.plateau_end") == 4.5);
  CHECK(std::isnan(ev("info:events.never")));  // NaN is written to JSON as null
  CHECK(std::isnan(ev("info:events.missing")));
  CHECK(ev("info:final.M.1.0") == 0.3);
  CHECK(std::isnan(ev("info:final.M.2.0")));
  CHECK(ev("info:agree") == 1.0);
  CHECK(ev("info:dotted.key") == 7.0);  // a key that contains a dot
  CHECK(ev("table:prune.csv:last:risk") == 0.4);
  CHECK(ev("table:prune.csv:min:risk") == 0.1);
  CHECK(std::isnan(ev("table:absent.csv:last:risk")));
  CHECK(ev("y") == -3.0);           // a column of the main table: its final value
  CHECK(ev("bayes_risk") == 0.25);  // otherwise a key of info
  CHECK(ev("sink_share") == 0.5);  // then info.observables
  CHECK(std::isnan(ev("nowhere")));
  // The main table follows the command.
  CHECK(main_table_name("curve", tables()) == "curve.csv");
  CHECK(main_table_name("simulate", tables()) == "curve.csv");  // no sim.csv: the first table
}

TEST_CASE("labels and malformed specifications") {
  CHECK(parse_observable("final:risk").label == "final_risk");
  CHECK(parse_observable("info:events.plateau_end").label == "events.plateau_end");
  CHECK(parse_observable("at:10:risk").label == "risk_at_10");
  CHECK(parse_observable("table:prune.csv:last:risk").label == "prune_final_risk");
  CHECK(parse_observable("r=final:risk").label == "r");
  CHECK(parse_observable("loss").label == "loss");
  for (const char* bad : {"", "final:", "final:a:b", "at:x:risk", "at:1", "cross:risk", "median:risk", "info:", "table:prune.csv:risk",
                          ":final:risk=", "a b", "=final:risk", "x:y=final:risk"}) {
    const std::string spec = bad;
    CAPTURE(spec);
    try {
      parse_observable(bad);
      FAIL("expected an InputError");
    } catch (const InputError& e) {
      CHECK(e.key() == "--observable");
    }
  }
}
