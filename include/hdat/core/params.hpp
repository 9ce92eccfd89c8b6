#pragma once
// The parameter layer: every model declares its configuration keys once (type, default, allowed
// range, one-line meaning). Theory and simulator read the same resolved Params object, so they
// cannot disagree on a default or a scaling.
//
// Resolution order: defaults < --config FILE.json < --set key=value (later wins). Keys may be
// nested ("prior.kind"); a config file may spell them nested or dotted. A --set value is parsed as
// JSON when it parses, otherwise taken as a string.
#include <Eigen/Dense>
#include <any>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hdat/core/error.hpp"

namespace hdat {

using json = nlohmann::json;

enum class ParamKind { real, integer, boolean, text, choice, real_list, int_list, real_matrix, any };

/// Closed or open bounds on a number (applied element-wise to lists and matrices).
struct Range {
  std::optional<double> lo, hi;
  bool lo_open = false, hi_open = false;
  static Range positive() { return {0.0, std::nullopt, true, false}; }
  static Range nonnegative() { return {0.0, std::nullopt, false, false}; }
  static Range at_least(double v) { return {v, std::nullopt, false, false}; }
  static Range between(double a, double b) { return {a, b, false, false}; }
  static Range open_between(double a, double b) { return {a, b, true, true}; }
  bool contains(double x) const;
  std::string describe() const;  // e.g. "> 0", "in [1, 64]"
};

class Params;

struct ParamSpec {
  std::string key;
  ParamKind kind = ParamKind::real;
  json default_value;  // null: optional key without a default (the model supplies the meaning)
  std::string doc;
  Range range;
  std::vector<std::string> choices;  // for ParamKind::choice
  /// The configurations the key applies to: `applies` decides, `condition` says it in words
  /// ("activation is softmax or softmax1"). Empty: always. Setting a key explicitly where it does not
  /// apply is an input error, never silently ignored.
  std::string condition;
  std::function<bool(const Params&)> applies;
  std::vector<std::string> condition_keys;  ///< keys the condition reads (their values go in the message)
  /// False for a key that changes no finite-dimensional run (a theory-only key, a harness key that
  /// chooses what is compared): left out of the hash that names persisted seeds, so that simulate and
  /// validate share finished runs across such keys.
  bool changes_simulation = true;
  std::string kind_name() const;
};

/// The declaration of a model's keys. Built fluently:
///   ParamSet p; p.integer("H", 2, "number of heads", Range::between(1, 64)).real("eta", 0.5, ...);
class ParamSet {
 public:
  ParamSet& real(const std::string& key, json def, const std::string& doc, Range r = {});
  ParamSet& integer(const std::string& key, json def, const std::string& doc, Range r = {});
  ParamSet& boolean(const std::string& key, json def, const std::string& doc);
  ParamSet& text(const std::string& key, json def, const std::string& doc);
  ParamSet& choice(const std::string& key, const std::string& def, std::vector<std::string> choices,
                   const std::string& doc);
  ParamSet& real_list(const std::string& key, json def, const std::string& doc, Range r = {});
  ParamSet& int_list(const std::string& key, json def, const std::string& doc, Range r = {});
  ParamSet& real_matrix(const std::string& key, json def, const std::string& doc, Range r = {});
  ParamSet& any(const std::string& key, json def, const std::string& doc);
  ParamSet& add(ParamSpec spec);
  ParamSet& merge(const ParamSet& other);  // keys of `other` not yet declared are appended

  /// The key declared last applies only where `applies` holds (`condition` says where, in words;
  /// `reads` names the keys it depends on).
  ParamSet& when(std::string condition, std::function<bool(const Params&)> applies, std::vector<std::string> reads = {});
  /// The key declared last applies only where the key `other` takes one of `values`.
  ParamSet& when_in(const std::string& other, std::vector<std::string> values);
  /// The key declared last changes no finite run (ParamSpec::changes_simulation).
  ParamSet& theory_only();
  /// The same for earlier keys (std::logic_error for a key not declared).
  ParamSet& theory_only(const std::vector<std::string>& keys);
  /// The same condition for an earlier key.
  ParamSet& condition(const std::string& key, std::string condition, std::function<bool(const Params&)> applies,
                      std::vector<std::string> reads = {});

  const std::vector<ParamSpec>& specs() const { return specs_; }
  const ParamSpec* find(const std::string& key) const;
  std::vector<std::string> keys() const;

  /// A key that exists no more: setting it is an InputError saying what replaced it (`instead`).
  ParamSet& retire(const std::string& key, std::string instead);
  /// What replaced a retired key; null when `key` was never retired.
  const std::string* retired(const std::string& key) const;

 private:
  std::vector<ParamSpec> specs_;
  std::vector<std::pair<std::string, std::string>> retired_;
};

/// A resolved configuration: every declared key present (null for optional keys left unset),
/// checked against its type and range. Accessors throw InputError naming the key.
class Params {
 public:
  Params() = default;
  /// `given`: the keys set explicitly (config file, --set, overrides), as opposed to defaults.
  Params(std::shared_ptr<const ParamSet> set, json flat, std::set<std::string> given = {})
      : set_(std::move(set)), flat_(std::move(flat)), given_(std::move(given)) {}

  bool has(const std::string& key) const;  // declared and not null
  double real(const std::string& key) const;
  long integer(const std::string& key) const;
  bool boolean(const std::string& key) const;
  std::string text(const std::string& key) const;
  Eigen::VectorXd vector(const std::string& key) const;
  std::vector<long> int_vector(const std::string& key) const;
  Eigen::MatrixXd matrix(const std::string& key) const;
  const json& raw(const std::string& key) const;
  /// Set explicitly (not a default)?
  bool given(const std::string& key) const { return given_.count(key) > 0; }

  /// Flat map "a.b" -> value, and the nested form written to run.json.
  const json& flat() const { return flat_; }
  json nested() const;
  const ParamSet& set() const { return *set_; }

  /// Copy with some keys replaced (values checked like --set values, and counted as set explicitly).
  /// Used by sweeps and validate.
  /// The copy carries no binding: its keys differ.
  Params with(const json& flat_overrides) const;

  /// What the model's check made of these parameters (a dynamics model's bound configuration),
  /// kept so that the command works from that binding instead of parsing and binding again
  /// (ModelEntry::check attaches it). Null when none of type T is attached.
  template <class T>
  std::shared_ptr<const T> binding() const {
    const auto* b = std::any_cast<std::shared_ptr<const T>>(&binding_);
    return b ? *b : nullptr;
  }
  template <class T>
  void attach(std::shared_ptr<const T> binding) { binding_ = std::move(binding); }
  /// The same keys without the binding (a sweep point, checked now and bound again when it runs, so
  /// that a large grid does not hold every point's bound model).
  Params without_binding() const { return Params(set_, flat_, given_); }

 private:
  const ParamSpec& spec(const std::string& key) const;
  std::shared_ptr<const ParamSet> set_;  // shared: a Params never outlives its declaration
  json flat_;
  std::set<std::string> given_;
  std::any binding_;  ///< a std::shared_ptr<const T>, or empty
};

/// Every key set explicitly must apply to the configuration (ParamSpec::condition); InputError naming
/// the first one that does not, and the condition.
void check_conditions(const Params& p);

/// Parse "key=value" as given to --set: value read as JSON when it parses, else as a string.
std::pair<std::string, json> parse_assignment(const std::string& text);

/// Flatten nested objects into dotted keys ("prior": {"kind": x} -> "prior.kind": x), stopping at
/// keys the set declares (so a key of kind `any` may hold an object).
json flatten_config(const json& nested, const ParamSet& set);

/// Resolve defaults < config file < assignments. Throws InputError on any unknown key, wrong type,
/// out-of-range value, or a key set where it does not apply. The Params keeps its own copy of `set`.
Params resolve(const ParamSet& set, const json& config, const std::vector<std::pair<std::string, json>>& assignments);

/// Read a JSON config file (InputError on unreadable or malformed file).
json read_config_file(const std::string& path);

/// Parse JSON that a user wrote (`what`, e.g. "file 'c.json'"): InputError(key) on malformed text,
/// naming the line and column, what is wrong there, and that line.
json parse_json_input(const std::string& text, const std::string& key, const std::string& what);

/// Check a value against a spec and return it in canonical form (e.g. integral reals -> integers).
json check_value(const ParamSpec& spec, const json& value);

}  // namespace hdat
