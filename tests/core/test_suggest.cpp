// The one suggestion of every front end (hdat/core/suggest.hpp): the edit distance's identities, and
// which names are suggested for which misspellings.
#include <doctest/doctest.h>

#include <random>

#include "hdat/core/params.hpp"
#include "hdat/core/suggest.hpp"
#include "../input_error_message.hpp"

using namespace hdat;

namespace {
// Distance by the textbook recursion on every prefix pair (independent of the three-row version).
std::size_t reference_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  for (std::size_t i = 0; i <= a.size(); ++i)
    for (std::size_t j = 0; j <= b.size(); ++j) {
      if (i == 0 || j == 0) {
        d[i][j] = i + j;
        continue;
      }
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}
}  // namespace

TEST_CASE("edit distance: known values, and the identities on random words") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("eta", "eat") == 1);        // a swap of neighbours is one edit
  CHECK(edit_distance("abc", "ca") == 3);          // optimal string alignment: no edit inside a swap
  CHECK(edit_distance("", "softmax") == 7);
  CHECK(edit_distance("ETA", "eta") == 0);         // case is not a misspelling
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(0, 7), letter(0, 3);
  auto word = [&] {
    std::string w;
    for (int i = len(rng); i > 0; --i) w += static_cast<char>('a' + letter(rng));
    return w;
  };
  for (int k = 0; k < 2000; ++k) {
    const std::string a = word(), b = word();
    const std::size_t d = edit_distance(a, b);
    CHECK(d == reference_distance(a, b));
    CHECK(d == edit_distance(b, a));
    CHECK((d == 0) == (a == b));
    CHECK(d >= (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()));
    CHECK(d <= std::max(a.size(), b.size()));
  }
}

TEST_CASE("the nearest name: near enough to be meant, never the word itself, never a guess") {
  const std::vector<std::string> keys = {"H", "L", "eta", "activation", "prior.kind", "prior.mean", "t_max"};
  CHECK(nearest("etaa", keys) == "eta");
  CHECK(nearest("aet", keys) == std::nullopt);             // two edits in three letters: not a likely misspelling
  CHECK(nearest("eat", keys) == "eta");
  CHECK(nearest("activaton", keys) == "activation");
  CHECK(nearest("kind", keys) == "prior.kind");            // the last part of a dotted key
  CHECK(nearest("tmax", keys) == "t_max");
  CHECK(nearest("X", keys) == std::nullopt);                // one letter: every other letter is as near
  CHECK(nearest("eta", keys) == std::nullopt);              // not misspelt
  CHECK(nearest("zzzzzz", keys) == std::nullopt);
  CHECK(did_you_mean("etaa", keys) == "; did you mean 'eta'?");
  CHECK(did_you_mean("zzzzzz", keys).empty());
  CHECK(did_you_mean_among("etaa", {"H", "eta"}, "allowed keys") == "; did you mean 'eta'? (allowed keys: H, eta)");
  CHECK(did_you_mean_among("zzzz", {"H", "eta"}, "allowed keys") == "; allowed keys: H, eta");
}

TEST_CASE("parameter messages suggest the nearest key and choice") {
  ParamSet set;
  set.real("eta", 0.5, "learning rate", Range::positive())
      .choice("activation", "softmax", {"softmax", "softmax1", "bayes"}, "activation")
      .choice("prior.kind", "gaussian", {"gaussian", "discrete"}, "prior");
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("etaa=1")}); }) ==
        "parameter 'etaa': unknown key (from --set); did you mean 'eta'? (allowed keys: eta, activation, prior.kind)");
  CHECK(message_of([&] { resolve(set, json{{"prior", {{"knd", "discrete"}}}}, {}); }).find("(from --config); did you mean 'prior.kind'?") !=
        std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {parse_assignment("activation=sotfmax")}); }).find("did you mean 'softmax'?") != std::string::npos);
  CHECK(message_of([&] { resolve(set, {}, {}).with(json{{"eat", 1}}); }).find("did you mean 'eta'?") != std::string::npos);
}

TEST_CASE("malformed JSON is located at the offending token") {
  auto where = [](const std::string& text) { return message_of([&] { parse_json_input(text, "--config", "file 'c.json'"); }); };
  CHECK(where("{\n  \"eta\": 0.5,\n  \"H\": 2 \"L\": 4\n}").find("line 3, column 10:") != std::string::npos);
  CHECK(where("{\"a\": [1, 2,, 3]}").find("line 1, column 13:") != std::string::npos);
  CHECK(where("{\"a\": nul}").find("line 1, column 7:") != std::string::npos);
  CHECK(where("{\"a\": 1").find("line 1, column 8:") != std::string::npos);  // the end of the text
  CHECK(where("{\"a\": 1,}").find("parameter '--config': file 'c.json' is not valid JSON: line 1, column 9:") == 0);
  CHECK(where("{\n\t\"a\": \xff}").find("(the line: ` \"a\": ?}`)") != std::string::npos);  // bytes shown as text
  // A number beyond double is nlohmann's out_of_range, not a parse_error: still one InputError (found
  // by 200 000 random edits of a config under ASan, 2026-12-04).
  CHECK(where("{\"a\": 2.5e531}") == "parameter '--config': file 'c.json' is not valid JSON: number overflow parsing '2.5e531'");
  CHECK(parse_json_input("{\"a\": [1, 2]}", "k", "w")["a"][1] == 2);
}
