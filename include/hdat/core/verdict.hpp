#pragma once
// The verdict of validate, and the one criterion behind it, for every model and mode (trajectories,
// drift, the 1/d extrapolation of state-evolution models):
//
//   compared entry k: deviation δ_k = theory − measurement, standard error s_k = √(s_seeds² + s_other²).
//   If the theory is right, δ_k / s_k is a Student t with ν_k degrees of freedom: seeds − 1 for a mean
//   over seeds, Welch–Satterthwaite when a second estimated error (the theory's own sampling over
//   replicas) is added. The entry is OUTSIDE when
//       |δ_k| > c_k s_k + allowance_k,     c_k = t⁻¹_{ν_k}(1 − α / (2m)),
//   m the number of compared entries with a standard error (Bonferroni): the probability that a right
//   theory gives any entry outside is at most α = `false_alarm`, whatever m, the seed counts and the
//   dependence between entries. The allowance (rel_tolerance · scale, …) covers a known bias (the
//   O(1/√D) of finite size, round-off); it only makes a false alarm rarer.
//   The verdict:
//     disagree   some entry is outside: a deviation that a right theory gives with probability ≤ α;
//     undecided  none is, but at some entry the smallest deviation the criterion catches, c_k s_k,
//                exceeds `detectable` · scale_k: the data could not have seen a wrong theory there.
//                It says which key to raise and to what (seeds N: s shrinks as 1/√N, ν = N − 1);
//     agree      otherwise: no deviation, and any of `detectable` · scale would have been caught.
//   Resolution is judged per block (a quantity, a drift term): a block is unresolved when more than
//   half of its entries cannot catch `detectable` · scale, so that a deviation of that size present at
//   most of a block's entries is always looked at where it can be seen.
//
// The sign-flip test (FamilyTest::decide, when the entries carry their per-seed deviations). With a
// handful of seeds the t test above is honest but nearly powerless: t_3 at α / (2m) for m ≈ 2000
// entries is c ≈ 75. Seeds are independent, and under a right theory each seed's vector of deviations
// (beyond the allowance) is symmetric about 0, so flipping the sign of whole seeds leaves its law
// unchanged (Fisher's randomisation; Westfall–Young for the maximum over entries):
//       T(ε) = max over combined entries j of | Σ_{k∈j} t_k(ε) | / √|j|,
//   t_k(ε) the t statistic over seeds of ε_u x_uk, x_uk seed u's deviation at entry k less the part of
//   the mean inside the allowance (its variance floored at 1% of its block's mean square), j the same
//   time and quantity at every size (a wrong theory deviates alike at every size). DISAGREE when T(1) exceeds the
//   ⌊α N⌋-th largest of the other N − 1 patterns: false alarm ⌊α N⌋ / N ≤ α exactly, whatever the
//   entries' correlations and without normality; every pattern when 2^(U−1) ≤ 2048 (U seeds over all
//   sizes), else 2047 random ones. Fewer than 8 seeds in all cannot reach α = 0.01 (UNDECIDED, with
//   how many would). A block is resolved when a deviation growing linearly in time to `detectable` ·
//   scale at the end of the window (a wrong term's signature) would be caught.
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/exit_code.hpp"

namespace hdat {

enum class VerdictKind { agree, disagree, undecided };

/// A verdict and why (empty reasons: agree with nothing to add).
struct Verdict {
  VerdictKind kind = VerdictKind::agree;
  std::vector<std::string> reasons;

  static Verdict disagree(std::string reason) { return {VerdictKind::disagree, {std::move(reason)}}; }
  static Verdict undecided(std::string reason) { return {VerdictKind::undecided, {std::move(reason)}}; }
  /// "agree", "disagree", "undecided" (validate.json's `verdict`).
  std::string name() const;
  /// agree: ok (0); disagree: disagree (1); undecided: undecided (5).
  ExitCode exit_code() const;
  /// The stricter of the two (disagree over undecided over agree); the reasons of both.
  Verdict& merge(const Verdict& other);
};

/// What a retired criterion key (`tolerance`, `z_crit`) says it was replaced by.
std::string criterion_keys_instead();

/// For a summary line: "agree", "DISAGREE" or "UNDECIDED".
std::string verdict_word(const Verdict& v);

/// The two-sided critical value of m tests at family-wise false-alarm rate α (Bonferroni):
/// t⁻¹_ν(1 − α/(2m)), the normal quantile for ν = ∞. Boost.Math's students_t.
double critical_value(double false_alarm, long tests, double dof);

/// Welch–Satterthwaite degrees of freedom of s_a² + s_b² (an infinite ν: that error is exact).
double welch_satterthwaite(double se_a, double dof_a, double se_b, double dof_b);

/// One compared entry.
struct ComparedEntry {
  double deviation = 0;  ///< theory − measurement
  double se_seeds = 0;   ///< standard error over `seeds` independent repetitions (shrinks as 1/√seeds)
  long seeds = 0;
  double dof_seeds = std::numeric_limits<double>::quiet_NaN();  ///< NaN: seeds − 1
  /// Where the degrees of freedom come from something other than the seeds (a fit over sizes whose
  /// scatter sets se): the key that raises them ("dims"); more seeds then cannot resolve the entry.
  std::string dof_key;
  double se_other = 0;   ///< an independent error that more seeds do not reduce (the theory's sampling)
  double dof_other = std::numeric_limits<double>::infinity();
  double allowance = 0;  ///< accepted on top of c · SE (a known bias)
  double scale = 0;      ///< what `detectable` is relative to (the block's largest |value|)
  nlohmann::json where = nlohmann::json::object();  ///< names the entry (size, t, quantity ...)
  std::string block;     ///< entries whose resolution is judged together (a quantity's block, a term)
  // For the sign-flip test (all empty: the t test).
  /// theory − run of each independent seed of `unit_group`, in one order, with every error of the
  /// deviation in it (a sampled theory: each seed paired with its own sample set)
  std::vector<double> units;
  int unit_group = -1;        ///< entries of one group share their seeds (one size)
  std::string joint;          ///< entries of different groups with the same key are combined
  double ramp = 1;            ///< the share of `detectable` · scale injected here by the resolution check

  double se() const;
  double dof() const;  ///< Welch–Satterthwaite of the two errors
};

struct FamilyCriterion {
  double false_alarm = 0.01;  ///< α, family-wise
  double detectable = 0.1;    ///< relative to an entry's scale
  std::string seeds_key = "seeds";                 ///< the key that sets ComparedEntry::seeds
  std::string other_key = "";                      ///< the key that reduces se_other ("" : none)
  /// The criterion in words, `allowance` naming the allowance ("0.02 * scale(block)").
  std::string text(const std::string& allowance) const;
};

/// How one entry fares against m tests.
struct Judgement {
  double se = 0, dof = 0, critical = 0;
  double allowed = 0;    ///< c · SE + allowance
  double catchable = 0;  ///< c · SE: the smallest deviation beyond the allowance that is caught
  bool agree = true;     ///< |deviation| ≤ allowed
  bool resolved = true;  ///< catchable ≤ detectable · scale
};
Judgement judge(const ComparedEntry& e, const FamilyCriterion& c, long tests);

/// The fewest seeds at which c · SE ≤ detectable · scale for this entry (the seed error shrinking as
/// 1/√seeds, its degrees of freedom growing in proportion, the other error fixed); -1 when no number
/// of seeds suffices (the other error alone is too large), 0 when the entry is resolved already.
long seeds_needed(const ComparedEntry& e, const FamilyCriterion& c, long tests);

/// The outcome of the sign-flip test over a family (see above).
struct SignFlipOutcome {
  long seeds = 0;            ///< U, over every group
  long patterns = 0;         ///< N, the observed one included
  bool enumerated = true;    ///< every pattern (else a random sample)
  long rank = 0;             ///< ⌊α N⌋: the critical value is the rank-th largest of the others (0: none)
  double statistic = 0;      ///< T(1)
  double critical = INFINITY;
  double p_value = 1;        ///< #{T(ε) ≥ T(1)} / N
  double attained_false_alarm = 0;  ///< rank / N
  std::vector<double> w;     ///< per entry (0: not tested)
  std::vector<double> z;     ///< per entry: its combined entry's |statistic|
  std::map<std::string, bool> block_resolved;
  std::map<std::string, double> block_factor;  ///< smallest multiple of `detectable` caught (∞: none up to 64)
  long seeds_per_group = 0;  ///< the most seeds of any group
  long seeds_needed = 0;     ///< per group, to decide (0: enough; -1: seeds cannot)
};

/// A family of compared entries, judged together once all are in (m = the entries with SE > 0).
class FamilyTest {
 public:
  explicit FamilyTest(FamilyCriterion criterion) : criterion_(std::move(criterion)) {}
  std::size_t add(ComparedEntry e);  ///< its index
  /// Runs the sign-flip test when the entries carry their seeds' deviations (else nothing: the t test
  /// needs no pass over the family). Call once every entry is in, before judging.
  void decide();
  bool sign_flip() const { return flip_.has_value(); }
  const SignFlipOutcome* flip() const { return flip_ ? &*flip_ : nullptr; }
  long tests() const;
  std::size_t size() const { return entries_.size(); }
  const ComparedEntry& entry(std::size_t k) const { return entries_[k]; }
  Judgement judge(std::size_t k) const;
  const FamilyCriterion& criterion() const { return criterion_; }
  /// The criterion in words, of the test this family runs (sign-flip after decide(), else the t test).
  std::string criterion_text(const std::string& allowance) const;
  /// disagree / undecided / agree over every entry (agree when there are none with a standard error
  /// and none outside).
  Verdict verdict() const;
  /// What validate.json carries: false_alarm, detectable, compared_entries, critical_value (the
  /// largest; and its range), entries_outside, worst (the entry with the largest |δ| / allowed),
  /// smallest_catchable (the largest c · SE / scale, and where), raise (key and value) when undecided.
  nlohmann::json record() const;

 private:
  struct Summary;
  Summary summarise() const;
  std::string raise_text(long seeds, const std::string& dof_key = "") const;
  FamilyCriterion criterion_;
  std::vector<ComparedEntry> entries_;
  std::optional<SignFlipOutcome> flip_;
};

/// The sign-flip test over these entries (sign_flip.cpp).
SignFlipOutcome sign_flip_test(const std::vector<ComparedEntry>& entries, const FamilyCriterion& c);

}  // namespace hdat
