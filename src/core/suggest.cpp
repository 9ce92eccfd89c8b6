#include "hdat/core/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace hdat {

namespace {
char folded(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Edits from `word` to `candidate` as a suggestion counts them: the whole name, or one more than to the
// last dotted part (the part alone is what a user who forgot the prefix types).
std::size_t distance_to(std::string_view word, std::string_view candidate) {
  std::size_t d = edit_distance(word, candidate);
  const auto dot = candidate.rfind('.');
  if (dot != std::string_view::npos) d = std::min(d, edit_distance(word, candidate.substr(dot + 1)) + 1);
  return d;
}
}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: edits from a's first i characters to b's first j (three rows kept: the swap looks two back).
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> before(m + 1), previous(m + 1), current(m + 1);
  for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const bool same = folded(a[i - 1]) == folded(b[j - 1]);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && folded(a[i - 1]) == folded(b[j - 2]) && folded(a[i - 2]) == folded(b[j - 1]))
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[m];
}

std::optional<std::string> nearest(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty()) return std::nullopt;
  const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
  std::size_t best = std::numeric_limits<std::size_t>::max();
  const std::string* choice = nullptr;
  for (const auto& c : candidates) {
    if (c == word) return std::nullopt;  // not a misspelling
    const std::size_t d = distance_to(word, c);
    if (d < best) best = d, choice = &c;
  }
  if (!choice || best > allowed || best >= word.size()) return std::nullopt;
  return *choice;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto n = nearest(word, candidates);
  return n ? "; did you mean '" + *n + "'?" : "";
}

std::string did_you_mean_among(std::string_view word, const std::vector<std::string>& candidates, std::string_view label) {
  std::string all;
  for (const auto& c : candidates) all += (all.empty() ? "" : ", ") + c;
  const std::string hint = did_you_mean(word, candidates);
  return hint.empty() ? "; " + std::string(label) + ": " + all : hint + " (" + std::string(label) + ": " + all + ")";
}

}  // namespace hdat
