// Grid specifications: the forms, the values they give, and a clear InputError naming the key for
// every malformed one.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "hdat/core/error.hpp"
#include "hdat/core/registry.hpp"
#include "common.hpp"
#include "hdat/sweep/grid.hpp"
#include "hdat/specialization/model.hpp"

using namespace hdat;
using namespace hdat::sweep;

namespace {

const ParamSet& set() { return specialization::parameters(); }

// The error of a malformed spec: its key and message.
std::pair<std::string, std::string> error_of(const std::string& spec) {
  try {
    parse_axis(spec, set());
  } catch (const InputError& e) {
    return {e.key(), e.what()};
  }
  return {"", "(no error)"};
}

}  // namespace

TEST_CASE("linear and log grids: end points exact, equal steps / equal ratios") {
  const Axis a = parse_axis("prior.scale=0.5:2:7", set());
  REQUIRE(a.values.size() == 7);
  CHECK(a.values.front().get<double>() == 0.5);
  CHECK(a.values.back().get<double>() == 2.0);
  for (std::size_t i = 1; i < a.values.size(); ++i)
    CHECK(a.values[i].get<double>() - a.values[i - 1].get<double>() == doctest::Approx(0.25).epsilon(1e-12));
  CHECK(!a.log);
  CHECK(a.numeric);

  const Axis l = parse_axis("eta=0.01:10:7:log", set());
  REQUIRE(l.values.size() == 7);
  CHECK(l.log);
  CHECK(l.values.front().get<double>() == 0.01);
  CHECK(l.values.back().get<double>() == 10.0);
  for (std::size_t i = 1; i < l.values.size(); ++i)
    CHECK(l.values[i].get<double>() / l.values[i - 1].get<double>() == doctest::Approx(std::sqrt(10.0)).epsilon(1e-12));

  // Descending grids are allowed; count 1 needs start = stop.
  const Axis d = parse_axis("noise=1:0:3", set());
  CHECK(d.values[1].get<double>() == 0.5);
  CHECK(parse_axis("noise=0.3:0.3:1", set()).values.size() == 1);
}

TEST_CASE("integer keys: rounded to integers, stored as integers") {
  const Axis h = parse_axis("H=1:4:4", set());
  REQUIRE(h.values.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(h.values[static_cast<std::size_t>(i)].is_number_integer());
    CHECK(h.values[static_cast<std::size_t>(i)].get<long>() == i + 1);
  }
  CHECK(parse_axis("eta=1:100:3:log", set()).values[1].get<double>() == 10.0);
  const Axis dims = parse_axis("D=100:10000:5:log", set());
  const long want[] = {100, 316, 1000, 3162, 10000};  // round(100 * 10^(k/2))
  for (int k = 0; k < 5; ++k) CHECK(dims.values[static_cast<std::size_t>(k)].get<long>() == want[k]);
  // Values that round alike are refused rather than silently merged.
  const auto [key, msg] = error_of("H=1:2:4");
  CHECK(key == "H");
  CHECK(msg.find("appears twice") != std::string::npos);
}

TEST_CASE("explicit lists: numbers, choices without quotes, list-valued keys") {
  const Axis a = parse_axis("activation=[softmax, softmax1,bayes]", set());
  REQUIRE(a.values.size() == 3);
  CHECK(a.values[1] == "softmax1");
  CHECK(!a.numeric);
  const Axis q = parse_axis("activation=[\"softmax\",\"bayes\"]", set());
  CHECK(q.values[1] == "bayes");
  const Axis m = parse_axis("prior.mean=[[1,1],[2,0.5]]", set());
  REQUIRE(m.values.size() == 2);
  CHECK(m.values[1][1].get<double>() == 0.5);
  CHECK(!m.numeric);
  const Axis h = parse_axis("H=[1,2,8]", set());
  CHECK(h.values[2].get<long>() == 8);
  CHECK(h.numeric);
  CHECK(split_list("a, [1,2], 'x,y'").size() == 3);
}

TEST_CASE("malformed grid specifications: one clear message naming the key") {
  struct Case {
    const char* spec;
    const char* key;
    const char* says;
  };
  const Case cases[] = {
      {"H", "--grid", "expected key=start:stop:count"},
      {"=1:2:3", "--grid", "expected key=start:stop:count"},
      {"Hx=1:2:3", "Hx", "not a parameter"},
      {"H=", "H", "no values"},
      {"H=1:4", "H", "expected key=start:stop:count"},
      {"H=1:4:5:log:x", "H", "expected key=start:stop:count"},
      {"eta=1:2:3:lin", "eta", "may only be 'log'"},
      {"eta=a:2:3", "eta", "start 'a' is not a finite number"},
      {"eta=1:inf:3", "eta", "stop 'inf' is not a finite number"},
      {"eta=1:2:0", "eta", "count '0' must be a whole number"},
      {"eta=1:2:2.5", "eta", "count '2.5' must be a whole number"},
      {"eta=1:2:1", "eta", "count 1 needs start = stop"},
      {"eta=0:1:3:log", "eta", "log grid needs start > 0"},
      {"activation=1:2:3", "activation", "needs a number key"},
      {"activation=[softmax,relu]", "activation", "\"relu\""},
      {"eta=[0.1,-1]", "eta", "value -1"},
      {"H=0:3:4", "H", "value 0"},
      {"eta=[]", "eta", "empty"},
      {"eta=[1,,2]", "eta", "empty list entry"},
      {"eta=[1,2", "eta", "not closed"},
      {"H=[1,2,1]", "H", "appears twice"},
      {"prior.mean=[1,2]", "prior.mean", "value 1: expected a list of numbers"},
  };
  for (const auto& c : cases) {
    const std::string spec = c.spec;
    CAPTURE(spec);
    const auto [key, msg] = error_of(c.spec);
    CHECK(key == c.key);
    CHECK(msg.find(c.says) != std::string::npos);
    if (std::string(c.key) != "--grid") CHECK(msg.find(c.key) != std::string::npos);
  }
}

TEST_CASE("points: cartesian product (first axis slowest), checked like single runs, hashed by parameters") {
  register_models_for_tests();
  const ModelEntry& m = registry().get("specialization");
  const Params base = resolve_for(m, nullptr, {});
  const std::vector<Axis> axes = {parse_axis("H=[1,2]", m.params), parse_axis("eta=[0.5,1,2]", m.params)};
  const auto pts = make_points(m, "curve", base, axes);
  REQUIRE(pts.size() == 6);
  CHECK(pts[1].overrides["H"] == 1);
  CHECK(pts[1].overrides["eta"] == 1.0);
  CHECK(pts[3].overrides["H"] == 2);
  CHECK(pts[3].overrides["eta"] == 0.5);
  CHECK(pts[5].params.integer("H") == 2);
  CHECK(pts[5].params.real("eta") == 2.0);

  // The hash is the identity of the resolved run: the same run from another grid or a --set has the
  // same hash (that is what makes resume work); any change of a parameter or of the command changes it.
  const Params direct = resolve_for(m, nullptr, {{"H", 2}, {"eta", 2}});
  CHECK(point_hash("specialization", "curve", direct) == pts[5].hash);
  CHECK(point_hash("specialization", "simulate", direct) != pts[5].hash);
  CHECK(point_hash("specialization", "curve", direct.with({{"seed", 1}})) != pts[5].hash);
  CHECK(pts[5].hash.size() == 16);
  std::set<std::string> hashes;
  for (const auto& p : pts) hashes.insert(p.hash);
  CHECK(hashes.size() == pts.size());

  // A combination the model's check rejects names the key and the grid point.
  try {
    make_points(m, "curve", base, {parse_axis("F=[2,3]", m.params)});
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.key() == "prior.mean");
    CHECK(std::string(e.what()).find("F=3") != std::string::npos);
  }
  CHECK_THROWS_AS(make_points(m, "curve", base, {parse_axis("H=[1,2]", m.params), parse_axis("H=[3]", m.params)}), InputError);
}
