#pragma once
// Scalar observables of a state (the population risk, ...), each with its standard error where it is
// sampled: what a theory and a finite system report beside the order parameters.
#include <string>
#include <vector>

namespace hdat {

/// A number and its standard error (se = 0: exact).
struct Measured {
  double value = 0;
  double se = 0;
};

/// Scalar observables in a fixed order ("risk", "eg", ...). `estimated` marks those carrying a
/// sampling error, so that their standard error gets a column (risk, risk_se).
class Observables {
 public:
  Observables& add(const std::string& name, double value);                ///< exact
  Observables& add(const std::string& name, double value, double se);     ///< estimated
  /// In a run's table the blocks' columns follow the observables added so far (default: all of
  /// them), e.g. to keep the column order a spec prescribes.
  Observables& blocks_here();
  std::size_t blocks_at() const { return blocks_at_ < names_.size() ? blocks_at_ : names_.size(); }
  std::size_t size() const { return names_.size(); }
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const;
  const Measured& operator[](const std::string& name) const;  ///< std::out_of_range when absent
  const Measured& at(std::size_t k) const { return values_[k]; }
  bool estimated(std::size_t k) const { return estimated_[k]; }

 private:
  std::vector<std::string> names_;
  std::vector<Measured> values_;
  std::vector<bool> estimated_;
  std::size_t blocks_at_ = static_cast<std::size_t>(-1);
};

}  // namespace hdat
