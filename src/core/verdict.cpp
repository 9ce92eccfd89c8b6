#include "hdat/core/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

#include "hdat/core/output.hpp"

namespace hdat {

std::string Verdict::name() const {
  switch (kind) {
    case VerdictKind::agree: return "agree";
    case VerdictKind::disagree: return "disagree";
    case VerdictKind::undecided: return "undecided";
  }
  return "disagree";
}

ExitCode Verdict::exit_code() const {
  switch (kind) {
    case VerdictKind::agree: return ExitCode::ok;
    case VerdictKind::undecided: return ExitCode::undecided;
    case VerdictKind::disagree: return ExitCode::disagree;
  }
  return ExitCode::disagree;
}

Verdict& Verdict::merge(const Verdict& other) {
  const auto rank = [](VerdictKind k) { return k == VerdictKind::disagree ? 2 : k == VerdictKind::undecided ? 1 : 0; };
  if (rank(other.kind) > rank(kind)) kind = other.kind;
  reasons.insert(reasons.end(), other.reasons.begin(), other.reasons.end());
  return *this;
}

std::string criterion_keys_instead() {
  return "validate's criterion is now false_alarm (the family-wise false-alarm rate, default 0.01) and detectable (the "
         "smallest deviation that must be caught, relative to the scale, default 0.1); docs/validation.md";
}

std::string verdict_word(const Verdict& v) {
  return v.kind == VerdictKind::agree ? "agree" : v.kind == VerdictKind::disagree ? "DISAGREE" : "UNDECIDED";
}

double critical_value(double false_alarm, long tests, double dof) {
  if (tests < 1) tests = 1;
  const double tail = false_alarm / (2.0 * static_cast<double>(tests));  // two-sided, Bonferroni
  if (!(dof > 0)) return std::numeric_limits<double>::infinity();      // no degree of freedom: nothing known
  if (std::isinf(dof)) return boost::math::quantile(boost::math::complement(boost::math::normal(), tail));
  return boost::math::quantile(boost::math::complement(boost::math::students_t(dof), tail));
}

double welch_satterthwaite(double se_a, double dof_a, double se_b, double dof_b) {
  const double va = se_a * se_a, vb = se_b * se_b;
  const double denominator = (std::isinf(dof_a) ? 0.0 : va * va / dof_a) + (std::isinf(dof_b) ? 0.0 : vb * vb / dof_b);
  if (denominator == 0) return std::numeric_limits<double>::infinity();  // both exact (or zero)
  return (va + vb) * (va + vb) / denominator;
}

double ComparedEntry::se() const { return std::hypot(se_seeds, se_other); }

double ComparedEntry::dof() const {
  const double own = std::isnan(dof_seeds) ? static_cast<double>(seeds - 1) : dof_seeds;
  if (se_seeds == 0) return se_other == 0 ? std::numeric_limits<double>::infinity() : dof_other;
  return welch_satterthwaite(se_seeds, own, se_other, dof_other);
}

std::string FamilyCriterion::text(const std::string& allowance) const {
  return fmt::format(
      "an entry is outside when |theory - simulation| > c * SE + {}; SE combines the standard error over {} (nu = {} - 1 "
      "degrees of freedom) with the theory's own (Welch-Satterthwaite); c = t_nu^-1(1 - false_alarm / (2 m)) for the m "
      "compared entries (Bonferroni): a right theory is called DISAGREE with probability <= {:g}; UNDECIDED where c * SE "
      "exceeds {:g} * scale (the block's largest |value|)",
      allowance, seeds_key, seeds_key, false_alarm, detectable);
}

std::string FamilyTest::criterion_text(const std::string& allowance) const {
  if (!flip_) return criterion_.text(allowance);
  return fmt::format(
      "an entry's deviation beyond the allowance (|theory - simulation| - {}) in units of its standard error over {}, "
      "summed over the sizes / sqrt(sizes) at each time and quantity; the largest of these against the {}-th largest of the "
      "same statistic under the {} sign patterns of the {} {}' paired deviations{} (Fisher's sign-flip test): a right theory "
      "is called DISAGREE with probability <= {:.3g} (<= false_alarm = {:g}) whatever the correlation between entries; "
      "UNDECIDED where a deviation growing linearly in time to {:g} * scale in a block would not be caught",
      allowance, criterion_.seeds_key, flip_->rank, flip_->patterns, flip_->seeds, criterion_.seeds_key,
      flip_->enumerated ? "" : " (a fixed random sample of them)", flip_->attained_false_alarm, criterion_.false_alarm,
      criterion_.detectable);
}

Judgement judge(const ComparedEntry& e, const FamilyCriterion& c, long tests) {
  Judgement j;
  j.se = e.se();
  // A difference known to round-off (a paired identity, or a fit through such differences): exact,
  // and allowed the round-off on top of the allowance.
  const double round_off = 1e-9 * e.scale;
  if (j.se <= round_off) j.se = 0;
  j.dof = e.dof();
  j.critical = critical_value(c.false_alarm, tests, j.dof);
  j.catchable = j.se > 0 ? j.critical * j.se : 0.0;
  j.allowed = (j.se > 0 ? j.catchable : round_off) + e.allowance;
  j.agree = std::fabs(e.deviation) <= j.allowed;
  j.resolved = e.scale == 0 || j.catchable <= c.detectable * e.scale;  // a theory of exactly 0: no relative resolution
  return j;
}

long seeds_needed(const ComparedEntry& e, const FamilyCriterion& c, long tests) {
  if (judge(e, c, tests).resolved) return 0;
  if (!e.dof_key.empty()) return -1;  // the degrees of freedom do not grow with the seeds
  const long n = std::max<long>(e.seeds, 1);
  const double own = std::isnan(e.dof_seeds) ? static_cast<double>(n - 1) : e.dof_seeds;
  const double dof_per_seed = n > 1 ? own / static_cast<double>(n - 1) : 1.0;
  const auto resolved_with = [&](long seeds) {
    ComparedEntry more = e;
    more.seeds = seeds;
    more.se_seeds = e.se_seeds * std::sqrt(static_cast<double>(n) / static_cast<double>(seeds));
    more.dof_seeds = dof_per_seed * static_cast<double>(seeds - 1);
    return judge(more, c, tests).resolved;
  };
  // Infinitely many seeds leave the other error, judged with its own degrees of freedom.
  if (critical_value(c.false_alarm, tests, e.dof_other) * e.se_other > c.detectable * e.scale) return -1;
  constexpr long kMost = 100000000;
  long hi = std::max<long>(n, 2);
  while (!resolved_with(hi)) {
    if (hi > kMost) return -1;
    hi *= 2;
  }
  long lo = std::max<long>(n, 2) == hi ? hi : hi / 2;  // lo fails unless it is hi
  while (hi - lo > 1) {
    const long mid = lo + (hi - lo) / 2;
    (resolved_with(mid) ? hi : lo) = mid;
  }
  return resolved_with(lo) ? lo : hi;
}

std::size_t FamilyTest::add(ComparedEntry e) {
  entries_.push_back(std::move(e));
  flip_.reset();
  return entries_.size() - 1;
}

void FamilyTest::decide() {
  flip_.reset();
  // The units must carry every error of the deviation (a sampled theory: each seed its own sample set).
  const bool seeds = std::any_of(entries_.begin(), entries_.end(), [](const ComparedEntry& e) { return !e.units.empty(); });
  if (seeds) flip_ = sign_flip_test(entries_, criterion_);
}

long FamilyTest::tests() const {
  long m = 0;
  if (flip_) {
    for (std::size_t k = 0; k < entries_.size(); ++k) m += flip_->w[k] > 0 ? 1 : 0;
    return m;
  }
  for (const ComparedEntry& e : entries_) m += e.se() > 0 ? 1 : 0;
  return m;
}

Judgement FamilyTest::judge(std::size_t k) const {
  if (!flip_) return hdat::judge(entries_[k], criterion_, tests());
  const ComparedEntry& e = entries_[k];
  Judgement j;
  j.se = flip_->w[k];
  j.dof = e.units.empty() ? INFINITY : static_cast<double>(e.units.size() - 1);
  if (j.se == 0) {  // not tested: the allowance alone
    j.allowed = e.allowance;
    j.agree = std::fabs(e.deviation) <= e.allowance;
    return j;
  }
  j.critical = flip_->critical;
  j.catchable = j.critical * j.se;
  j.allowed = j.catchable + e.allowance;
  j.agree = flip_->z[k] <= j.critical;  // its combined entry's judgement (every size at this time and quantity)
  const auto r = flip_->block_resolved.find(e.block);
  j.resolved = flip_->rank >= 1 && (r == flip_->block_resolved.end() || r->second);
  return j;
}

struct FamilyTest::Summary {
  long tests = 0, outside = 0, unresolved = 0;
  double critical_min = INFINITY, critical_max = 0;
  std::size_t worst = 0, least_resolved = 0;
  double worst_ratio = 0, resolution = 0;  // largest |δ| / allowed (sign flip: z / c); largest c·SE / scale
  long seeds = 0;                          // the most seeds any block needs (-1: seeds cannot)
  std::string dof_key;                     // an unresolved entry's degrees of freedom come from this key
  std::vector<std::string> unresolved_blocks;
};

FamilyTest::Summary FamilyTest::summarise() const {
  Summary s;
  s.tests = tests();
  // Per block: entries, unresolved ones, and the seeds each unresolved entry needs.
  std::map<std::string, std::pair<long, std::vector<long>>> blocks;
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    const ComparedEntry& e = entries_[k];
    const Judgement j = judge(k);
    if (j.se > 0) s.critical_min = std::min(s.critical_min, j.critical), s.critical_max = std::max(s.critical_max, j.critical);
    s.outside += j.agree ? 0 : 1;
    const double ratio = flip_ ? (j.se > 0 ? flip_->z[k] / j.critical : (j.agree ? 0.0 : INFINITY))
                               : j.allowed > 0 ? std::fabs(e.deviation) / j.allowed : (e.deviation == 0 ? 0.0 : INFINITY);
    if (ratio > s.worst_ratio || k == 0) s.worst_ratio = ratio, s.worst = k;
    const double resolution = j.catchable == 0 || e.scale == 0 ? 0.0 : j.catchable / e.scale;  // scale 0: resolved (judge)
    if (resolution > s.resolution || k == 0) s.resolution = resolution, s.least_resolved = k;
    auto& b = blocks[e.block];
    ++b.first;
    if (!j.resolved) {
      ++s.unresolved;
      if (!flip_) b.second.push_back(seeds_needed(e, criterion_, s.tests));
      if (!e.dof_key.empty()) s.dof_key = e.dof_key;
    }
  }
  if (flip_) {
    for (const auto& [name, resolved] : flip_->block_resolved)
      if (!resolved) s.unresolved_blocks.push_back(name);
    if (flip_->rank < 1) s.unresolved_blocks.push_back("all (too few sign patterns)");
    s.seeds = flip_->seeds_needed;
    return s;
  }
  // A block is unresolved when more than half of its entries are; it needs the seeds of its median.
  for (auto& [name, b] : blocks) {
    if (2 * static_cast<long>(b.second.size()) <= b.first) continue;
    s.unresolved_blocks.push_back(name);
    std::vector<long>& need = b.second;
    for (long& n : need) n = n < 0 ? std::numeric_limits<long>::max() : n;
    std::sort(need.begin(), need.end());
    const long median = need[need.size() - static_cast<std::size_t>(b.first / 2) - 1];
    if (s.seeds >= 0) s.seeds = median == std::numeric_limits<long>::max() ? -1 : std::max(s.seeds, median);
  }
  return s;
}

namespace {
std::string describe_entry(const nlohmann::json& where) {
  std::string text;
  for (const auto& [key, value] : where.items())
    text += fmt::format("{}{} = {}", text.empty() ? "" : ", ", key,
                        value.is_string() ? value.get<std::string>() : value.is_number() ? fmt::format("{:.6g}", value.get<double>()) : value.dump());
  return text.empty() ? "an entry" : text;
}
}  // namespace

std::string FamilyTest::raise_text(long seeds, const std::string& dof_key) const {
  if (seeds > 0) return fmt::format("raise {} to at least {}", criterion_.seeds_key, seeds);
  if (!dof_key.empty())
    return fmt::format("more {} alone cannot: the degrees of freedom come from the fit over the sizes (they scatter about it beyond "
                       "their errors): add sizes to {}", criterion_.seeds_key, dof_key);
  return fmt::format("more {} alone cannot: {}", criterion_.seeds_key,
                     criterion_.other_key.empty() ? "the other error is too large" : "raise " + criterion_.other_key);
}

Verdict FamilyTest::verdict() const {
  const Summary s = summarise();
  if (s.outside > 0) {
    const ComparedEntry& w = entries_[s.worst];
    const Judgement j = judge(s.worst);
    if (flip_)
      return Verdict::disagree(fmt::format(
          "{} of {} entries outside: at {} the deviation beyond the allowance is {:.3g} standard errors (combined over sizes), more "
          "than the critical value {:.3g} of the sign-flip test over {} seeds (p = {:.3g} of {} patterns; false alarm {:.3g} <= {:g}); "
          "deviation {:.3g}",
          s.outside, entries_.size(), describe_entry(w.where), flip_->z[s.worst], flip_->critical, flip_->seeds, flip_->p_value,
          flip_->patterns, flip_->attained_false_alarm, criterion_.false_alarm, w.deviation));
    return Verdict::disagree(fmt::format("{} of {} entries outside (false alarm {:g} over {} tests); worst {}: deviation {:.3g}, allowed "
                                         "{:.3g} ({:.2f}x)",
                                         s.outside, entries_.size(), criterion_.false_alarm, s.tests, describe_entry(w.where),
                                         w.deviation, j.allowed, s.worst_ratio));
  }
  if (flip_ && flip_->rank < 1)
    return Verdict::undecided(fmt::format("too few {} to decide: {} in all give {} sign patterns, and the sign-flip test cannot reach a false "
                                          "alarm of {:g} with fewer than {:.0f}; {}",
                                          criterion_.seeds_key, flip_->seeds, flip_->patterns, criterion_.false_alarm,
                                          std::ceil(1.0 / criterion_.false_alarm), raise_text(s.seeds)));
  if (flip_ && !s.unresolved_blocks.empty()) {
    std::string blocks;
    for (const std::string& b : s.unresolved_blocks)
      blocks += fmt::format("{}{} ({})", blocks.empty() ? "" : ", ", b,
                            std::isinf(flip_->block_factor.at(b)) ? std::string("not even 64 x")
                                                                  : fmt::format("{:.2g} x", flip_->block_factor.at(b)));
    return Verdict::undecided(fmt::format("too few {} to decide: a deviation growing linearly in time to detectable = {:g} x the scale "
                                          "would not have been caught in {} (the multiple it takes); {}",
                                          criterion_.seeds_key, criterion_.detectable, blocks,
                                          s.seeds > 0 ? raise_text(s.seeds)
                                                      : fmt::format("{} would have to grow more than 4096-fold, or detectable", criterion_.seeds_key)));
  }
  if (!s.unresolved_blocks.empty()) {
    const ComparedEntry& w = entries_[s.least_resolved];
    return Verdict::undecided(fmt::format("too few {} to decide: in {} more than half of the entries cannot catch detectable = {:g} x the "
                                          "scale (worst at {}: {:.3g} x; {} of {} entries alike); {}",
                                          criterion_.seeds_key, s.unresolved_blocks.front().empty() ? "the family" : s.unresolved_blocks.front(),
                                          criterion_.detectable, describe_entry(w.where), s.resolution, s.unresolved, entries_.size(),
                                          raise_text(s.seeds, s.dof_key)));
  }
  return {};
}

nlohmann::json FamilyTest::record() const {
  const Summary s = summarise();
  nlohmann::json r = {{"false_alarm", criterion_.false_alarm},
                      {"detectable", criterion_.detectable},
                      {"test", flip_ ? "sign-flip" : "t (Bonferroni)"},
                      {"compared_entries", static_cast<long>(entries_.size())},
                      {"tests", s.tests},
                      {"critical_value", s.tests > 0 ? number_or_null(s.critical_max) : nlohmann::json(nullptr)},
                      {"critical_value_range", s.tests > 0 ? nlohmann::json{number_or_null(s.critical_min), number_or_null(s.critical_max)}
                                                           : nlohmann::json(nullptr)},
                      {"entries_outside", s.outside},
                      {"entries_unresolved", s.unresolved},
                      {"blocks_unresolved", s.unresolved_blocks}};
  if (flip_) {
    nlohmann::json blocks = nlohmann::json::object();
    for (const auto& [name, factor] : flip_->block_factor) blocks[name] = {{"resolved", flip_->block_resolved.at(name)}, {"factor", number_or_null(factor)}};
    r["sign_flip"] = {{"seeds", flip_->seeds},        {"patterns", flip_->patterns},
                      {"enumerated", flip_->enumerated}, {"statistic", flip_->statistic},
                      {"critical_value", number_or_null(flip_->critical)}, {"p_value", flip_->p_value},
                      {"attained_false_alarm", flip_->attained_false_alarm}, {"blocks", blocks}};
  }
  if (!entries_.empty()) {
    const ComparedEntry& w = entries_[s.worst];
    const Judgement j = judge(s.worst);
    nlohmann::json worst = w.where;
    worst["deviation"] = number_or_null(w.deviation);
    worst["se"] = number_or_null(j.se);
    worst["dof"] = number_or_null(j.dof);
    worst["allowed"] = number_or_null(j.allowed);
    worst["deviation_over_allowed"] = number_or_null(s.worst_ratio);
    r["worst"] = worst;
    const ComparedEntry& l = entries_[s.least_resolved];
    nlohmann::json least = l.where;
    least["catchable"] = number_or_null(judge(s.least_resolved).catchable);
    least["scale"] = number_or_null(l.scale);
    least["catchable_over_scale"] = number_or_null(s.resolution);
    r["smallest_catchable"] = least;
  }
  r["max_deviation_over_allowed"] = entries_.empty() ? nlohmann::json(0.0) : number_or_null(s.worst_ratio);
  if (s.outside == 0 && !s.unresolved_blocks.empty()) {
    if (s.seeds > 0)
      r["raise"] = {{"key", criterion_.seeds_key}, {"to", s.seeds}};
    else
      r["raise"] = {{"key", criterion_.other_key.empty() ? nlohmann::json(nullptr) : nlohmann::json(criterion_.other_key)}};
  }
  return r;
}

}  // namespace hdat
