#pragma once
// "Did you mean ...?": the nearest of the names a front end knows (keys, models, commands, options,
// choices, observable forms, columns) to a misspelt one. One place computes it, so the command line,
// the C++ API and Python suggest the same name in the same words.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hdat {

/// Edit distance between a and b: the fewest insertions, deletions, substitutions and swaps of two
/// adjacent characters that turn one into the other (optimal string alignment), ASCII case ignored.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `word`, when it is near enough to be what was meant: at most one edit per
/// three characters of `word` (one at least) and fewer edits than `word` has characters. A dotted
/// candidate also counts as near when its last part is (`kind` -> `prior.kind`). The first of equally
/// near candidates wins; an exact match is never suggested (nullopt).
std::optional<std::string> nearest(std::string_view word, const std::vector<std::string>& candidates);

/// "; did you mean 'eta'?" when a candidate is near (nearest), else "": the one wording of every message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// The tail of an "unknown name" message: "; did you mean 'eta'? (allowed keys: H, L, eta)" when a
/// candidate is near, else "; allowed keys: H, L, eta" (`label` = "allowed keys").
std::string did_you_mean_among(std::string_view word, const std::vector<std::string>& candidates, std::string_view label);

}  // namespace hdat
