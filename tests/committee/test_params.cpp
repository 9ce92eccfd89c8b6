// The committee model's parameters: defaults of the spec, Config from Params, and one clear
// InputError naming the key for every bad input.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hdat/committee/model.hpp"
#include "hdat/core/error.hpp"

using namespace hdat;
using namespace hdat::committee;

namespace {

const ParamSet& keys() {
  static const ParamSet set = [] {
    ParamSet p;
    declare_model_keys(p);
    return p;
  }();
  return set;
}

Params params(const std::vector<std::string>& sets) {
  std::vector<std::pair<std::string, json>> a;
  for (const auto& s : sets) a.push_back(parse_assignment(s));
  Params p = resolve(keys(), {}, a);
  check(p);
  return p;
}

// The key an input error names ("" when none is thrown).
std::string rejected_key(const std::vector<std::string>& sets) {
  try {
    params(sets);
  } catch (const InputError& e) {
    return e.key();
  }
  return "";
}

}  // namespace

TEST_CASE("the spec's defaults") {
  const Config s = Config::from(params({}));
  CHECK(s.N == 500);
  CHECK(s.K == 2);
  CHECK(s.M == 2);
  CHECK(s.activation == Activation::erf);
  CHECK(s.eta == 0.5);
  CHECK(s.eta_v == 0.5);  // eta_v defaults to eta
  CHECK_FALSE(s.train_v);
  CHECK(s.noise == 0);
  CHECK(s.wd == 0);
  CHECK(s.vstar == Eigen::VectorXd::Ones(2));
  CHECK(s.v0 == Eigen::VectorXd::Ones(2));
  CHECK(s.teacher == TeacherKind::orthonormal);
  CHECK(s.init_std == 1.0);
  CHECK(s.broken_term == "none");
  CHECK(s.layout().size() == 4 + 4 + 4);  // Q, R, T; no v block
  const Config t = Config::from(params({"K=3", "M=1", "train_v=true", "eta=0.2", "activation=linear", "vstar=[2]"}));
  CHECK(t.eta_v == 0.2);
  CHECK(t.vstar(0) == 2.0);
  CHECK(t.layout().contains("v"));
  CHECK(t.active_terms() == std::vector<std::string>{"eta_linear", "eta_squared", "second_layer"});
}

TEST_CASE("bad input names the key") {
  CHECK(rejected_key({"K=0"}) == "K");
  CHECK(rejected_key({"eta=-1"}) == "eta");
  CHECK(rejected_key({"activation=relu"}) == "activation");
  CHECK(rejected_key({"vstar=[1,2,3]"}) == "vstar");
  CHECK(rejected_key({"K=3", "v0=[1,1]"}) == "v0");
  CHECK(rejected_key({"M=4", "N=3"}) == "N");
  CHECK(rejected_key({"eta_v=0.1"}) == "eta_v");  // only where train_v is true
  CHECK(rejected_key({"Q0=[[1,0],[0,1]]"}) == "R0");
  CHECK(rejected_key({"Q0=[[1,0],[0,1]]", "R0=[[0,0],[0,0]]", "T0=[[1,0],[0,1,2]]"}) != "");
  CHECK(rejected_key({"Q0=[[1,0.5],[0.4,1]]", "R0=[[0,0],[0,0]]", "T0=[[1,0],[0,1]]"}) == "Q0");       // not symmetric
  CHECK(rejected_key({"Q0=[[0.1,0],[0,0.1]]", "R0=[[0.9,0],[0,0.9]]", "T0=[[1,0],[0,1]]"}) == "Q0");  // not a covariance
  CHECK(rejected_key({"break_term=everything"}) == "break_term");
  CHECK(rejected_key({"train_v=true", "eta_v=0.1", "Q0=[[1,0],[0,1]]", "R0=[[0.5,0],[0,0.5]]", "T0=[[1,0],[0,1]]"}) == "");
}

TEST_CASE("given initial overlaps become the theory's start") {
  const Params p = params({"Q0=[[1,0.1],[0.1,0.8]]", "R0=[[0.5,0.2],[0.1,0.3]]", "T0=[[1,0],[0,1]]", "v0=[1,0.5]"});
  const Config s = Config::from(p);
  const Overlaps o = unpack(s, given_initial_state(p, s));
  CHECK(o.Q(1, 1) == 0.8);
  CHECK(o.R(0, 1) == 0.2);
  CHECK(o.v(1) == 0.5);
}
