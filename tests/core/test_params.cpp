#include <doctest/doctest.h>

#include "hdat/core/params.hpp"
#include "../input_error_message.hpp"

using namespace hdat;

namespace {
ParamSet demo() {
  ParamSet p;
  p.integer("H", 2, "heads", Range::between(1, 64))
      .real("eta", 0.5, "learning rate", Range::positive())
      .choice("activation", "softmax", {"softmax", "softmax1", "bayes"}, "activation")
      .choice("prior.kind", "gaussian", {"gaussian", "discrete"}, "prior")
      .real_list("prior.mean", json::array({1.0, 1.0}), "mean")
      .real_matrix("M0", nullptr, "initial M")
      .int_list("dims", json::array({250, 500}), "dims", Range::at_least(2));
  return p;
}
}  // namespace

TEST_CASE("defaults < config < --set, nested keys and JSON values") {
  const ParamSet set = demo();
  json cfg = {{"eta", 0.25}, {"prior", {{"kind", "discrete"}}}};
  auto p = resolve(set, cfg, {parse_assignment("eta=0.125"), parse_assignment("M0=[[0.1,0],[0,0.2]]"),
                              parse_assignment("activation=bayes")});
  CHECK(p.integer("H") == 2);
  CHECK(p.real("eta") == 0.125);
  CHECK(p.text("prior.kind") == "discrete");
  CHECK(p.text("activation") == "bayes");
  CHECK(p.matrix("M0")(1, 1) == 0.2);
  CHECK(p.vector("prior.mean").size() == 2);
  CHECK_FALSE(resolve(set, {}, {}).has("M0"));
  CHECK(p.nested()["prior"]["kind"] == "discrete");
}

TEST_CASE("bad input names the key and what is allowed") {
  const ParamSet set = demo();
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("etta=1")}); }).find("'etta': unknown key") != std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("eta=-1")}); }).find("'eta': must be > 0") != std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("H=1.5")}); }).find("'H': expected an integer") != std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("H=abc")}); }).find("'H'") != std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("activation=relu")}); }).find("softmax|softmax1|bayes") != std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("M0=[[1,2],[3]]")}); }).find("'M0'") != std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("dims=[1,500]")}); }).find("'dims': (entry 0) must be >= 2") != std::string::npos);
  // Beyond the integer type: the key's own range is what the message states where it has one; the
  // type's limit only where the key allows any size (dims has no upper bound).
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("H=2147483648")}); }).find("'H': must be in [1, 64] (got 2147483648)") !=
        std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("dims=[500,3e9]")}); }).find("'dims': (entry 1) must be an integer in [-2147483648, 2147483647]") !=
        std::string::npos);
  CHECK(message_of([&] { parse_assignment("novalue"); }).find("key=value") != std::string::npos);
}

TEST_CASE("a Params outlives the ParamSet it was resolved from (resolve keeps its own copy)") {
  // resolve() on a temporary declaration: the set is destroyed at the end of the full expression.
  // Reading the keys afterwards touches the declaration (spec lookup, ranges, documentation); with
  // a borrowed pointer this is a use after free (the ASan build, tools/sanitize.sh, reports it).
  const Params p = resolve(demo(), nullptr, {parse_assignment("H=4")});
  CHECK(p.integer("H") == 4);
  CHECK(p.real("eta") == 0.5);
  CHECK(p.set().specs().size() == demo().specs().size());
  const Params q = p.with({{"eta", 0.25}});
  CHECK(q.real("eta") == 0.25);
  CHECK(message_of([&] { (void)q.with({{"eta", -1.0}}); }).find("eta") != std::string::npos);
}

TEST_CASE("an assignment that is not UTF-8 is an input error naming the key (found by fuzz_config)") {
  // A value with a stray byte 0xBA used to reach the range check, whose message dumps the value as
  // JSON: nlohmann::json threw type_error 316 there, an exception no caller expects (not exit 2).
  CHECK(message_of([] { parse_assignment("heads=\xba" "2"); }).find("'heads'") != std::string::npos);
  CHECK(message_of([] { parse_assignment("heads=\xba" "2"); }).find("UTF-8") != std::string::npos);
  CHECK(message_of([] { parse_assignment("he\xff" "ads=2"); }).find("UTF-8") != std::string::npos);
  CHECK(parse_assignment("label=caf\xc3\xa9").second.get<std::string>() == "caf\xc3\xa9");  // valid UTF-8 passes
}
