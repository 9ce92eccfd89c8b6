#include "hdat/core/params.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace hdat {

bool Range::contains(double x) const {
  if (!std::isfinite(x)) return false;
  if (lo && (lo_open ? !(x > *lo) : !(x >= *lo))) return false;
  if (hi && (hi_open ? !(x < *hi) : !(x <= *hi))) return false;
  return true;
}

std::string Range::describe() const {
  if (lo && hi) return fmt::format("in {}{}, {}{}", lo_open ? "(" : "[", *lo, *hi, hi_open ? ")" : "]");
  if (lo) return fmt::format("{} {}", lo_open ? ">" : ">=", *lo);
  if (hi) return fmt::format("{} {}", hi_open ? "<" : "<=", *hi);
  return "finite";
}

std::string ParamSpec::kind_name() const {
  switch (kind) {
    case ParamKind::real: return "number";
    case ParamKind::integer: return "integer";
    case ParamKind::boolean: return "boolean";
    case ParamKind::text: return "string";
    case ParamKind::choice: {
      std::string s;
      for (const auto& c : choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
    case ParamKind::real_list: return "list of numbers";
    case ParamKind::int_list: return "list of integers";
    case ParamKind::real_matrix: return "matrix (list of rows)";
    case ParamKind::any: return "JSON value";
  }
  return "?";
}

ParamSet& ParamSet::add(ParamSpec spec) {
  if (find(spec.key)) throw std::logic_error("parameter declared twice: " + spec.key);
  if (!spec.default_value.is_null()) spec.default_value = check_value(spec, spec.default_value);
  specs_.push_back(std::move(spec));
  return *this;
}

namespace param_declaration {
namespace {
// A spec with no condition (ParamSet::when adds one): named fields, so that every member is set.
ParamSpec unconditional(const std::string& key, ParamKind kind, json def, const std::string& doc, Range range = {},
                        std::vector<std::string> choices = {}) {
  ParamSpec spec;
  spec.key = key;
  spec.kind = kind;
  spec.default_value = std::move(def);
  spec.doc = doc;
  spec.range = range;
  spec.choices = std::move(choices);
  return spec;
}
}  // namespace
}  // namespace param_declaration

ParamSet& ParamSet::real(const std::string& key, json def, const std::string& doc, Range r) {
  return add(param_declaration::unconditional(key, ParamKind::real, std::move(def), doc, r));
}
ParamSet& ParamSet::integer(const std::string& key, json def, const std::string& doc, Range r) {
  return add(param_declaration::unconditional(key, ParamKind::integer, std::move(def), doc, r));
}
ParamSet& ParamSet::boolean(const std::string& key, json def, const std::string& doc) {
  return add(param_declaration::unconditional(key, ParamKind::boolean, std::move(def), doc));
}
ParamSet& ParamSet::text(const std::string& key, json def, const std::string& doc) {
  return add(param_declaration::unconditional(key, ParamKind::text, std::move(def), doc));
}
ParamSet& ParamSet::choice(const std::string& key, const std::string& def, std::vector<std::string> choices,
                           const std::string& doc) {
  return add(param_declaration::unconditional(key, ParamKind::choice, json(def), doc, {}, std::move(choices)));
}
ParamSet& ParamSet::real_list(const std::string& key, json def, const std::string& doc, Range r) {
  return add(param_declaration::unconditional(key, ParamKind::real_list, std::move(def), doc, r));
}
ParamSet& ParamSet::int_list(const std::string& key, json def, const std::string& doc, Range r) {
  return add(param_declaration::unconditional(key, ParamKind::int_list, std::move(def), doc, r));
}
ParamSet& ParamSet::real_matrix(const std::string& key, json def, const std::string& doc, Range r) {
  return add(param_declaration::unconditional(key, ParamKind::real_matrix, std::move(def), doc, r));
}
ParamSet& ParamSet::any(const std::string& key, json def, const std::string& doc) {
  return add(param_declaration::unconditional(key, ParamKind::any, std::move(def), doc));
}

ParamSet& ParamSet::when(std::string condition, std::function<bool(const Params&)> applies, std::vector<std::string> reads) {
  if (specs_.empty()) throw std::logic_error("ParamSet::when before any key");
  return this->condition(specs_.back().key, std::move(condition), std::move(applies), std::move(reads));
}

namespace {
std::string alternatives(const std::vector<std::string>& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i)
    s += (i == 0 ? "" : (i + 1 == values.size() ? " or " : ", ")) + values[i];
  return s;
}
}  // namespace

ParamSet& ParamSet::when_in(const std::string& other, std::vector<std::string> values) {
  std::string text = other + " is " + alternatives(values);
  return when(
      std::move(text),
      [other, values = std::move(values)](const Params& p) {
        const json& v = p.raw(other);
        const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
        for (const auto& x : values)
          if (x == s) return true;
        return false;
      },
      {other});
}

ParamSet& ParamSet::condition(const std::string& key, std::string condition, std::function<bool(const Params&)> applies,
                              std::vector<std::string> reads) {
  for (auto& s : specs_)
    if (s.key == key) {
      s.condition = std::move(condition);
      s.applies = std::move(applies);
      s.condition_keys = std::move(reads);
      return *this;
    }
  throw std::logic_error("ParamSet::condition: parameter not declared: " + key);
}

ParamSet& ParamSet::merge(const ParamSet& other) {
  for (const auto& s : other.specs())
    if (!find(s.key)) specs_.push_back(s);
  return *this;
}

const ParamSpec* ParamSet::find(const std::string& key) const {
  for (const auto& s : specs_)
    if (s.key == key) return &s;
  return nullptr;
}

std::vector<std::string> ParamSet::keys() const {
  std::vector<std::string> k;
  for (const auto& s : specs_) k.push_back(s.key);
  return k;
}

namespace {

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);  // a message never fails on bad bytes
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

double number_in_range(const ParamSpec& spec, const json& v, const std::string& where) {
  if (!v.is_number()) throw InputError(spec.key, fmt::format("expected a number{}, got {}", where, shown(v)));
  const double x = v.get<double>();
  if (!spec.range.contains(x))
    throw InputError(spec.key, fmt::format("{}must be {} (got {})", where.empty() ? "" : where + " ", spec.range.describe(), shown(v)));
  return x;
}

json integer_in_range(const ParamSpec& spec, const json& v, const std::string& where) {
  const double x = number_in_range(spec, v, where);
  if (std::floor(x) != x || std::fabs(x) > 9.0e15)
    throw InputError(spec.key, fmt::format("expected an integer{}, got {}", where, shown(v)));
  return json(static_cast<long>(x));
}

}  // namespace

json check_value(const ParamSpec& spec, const json& value) {
  if (value.is_null()) return value;  // "unset": allowed for every key
  switch (spec.kind) {
    case ParamKind::real: return json(number_in_range(spec, value, ""));
    case ParamKind::integer: return integer_in_range(spec, value, "");
    case ParamKind::boolean:
      if (!value.is_boolean()) throw InputError(spec.key, "expected true or false, got " + shown(value));
      return value;
    case ParamKind::text:
      if (!value.is_string()) throw InputError(spec.key, "expected a string, got " + shown(value));
      return value;
    case ParamKind::choice: {
      const std::string allowed = spec.kind_name();
      if (!value.is_string()) throw InputError(spec.key, "expected one of " + allowed + ", got " + shown(value));
      for (const auto& c : spec.choices)
        if (c == value.get<std::string>()) return value;
      throw InputError(spec.key, "expected one of " + allowed + ", got " + shown(value));
    }
    case ParamKind::real_list:
    case ParamKind::int_list: {
      if (!value.is_array()) throw InputError(spec.key, fmt::format("expected a {} such as [1, 2], got {}", spec.kind_name(), shown(value)));
      json out = json::array();
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string where = fmt::format(" (entry {})", i);
        out.push_back(spec.kind == ParamKind::int_list ? integer_in_range(spec, value[i], where)
                                                       : json(number_in_range(spec, value[i], where)));
      }
      return out;
    }
    case ParamKind::real_matrix: {
      if (!value.is_array() || value.empty() || !value[0].is_array())
        throw InputError(spec.key, "expected a matrix as a list of rows such as [[1, 0], [0, 1]], got " + shown(value));
      const std::size_t cols = value[0].size();
      json out = json::array();
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_array() || value[i].size() != cols)
          throw InputError(spec.key, fmt::format("row {} has a different length than row 0 ({} entries)", i, cols));
        json row = json::array();
        for (std::size_t j = 0; j < cols; ++j) row.push_back(number_in_range(spec, value[i][j], fmt::format(" (entry [{}][{}])", i, j)));
        out.push_back(row);
      }
      return out;
    }
    case ParamKind::any: return value;
  }
  return value;
}

const ParamSpec& Params::spec(const std::string& key) const {
  const ParamSpec* s = set_ ? set_->find(key) : nullptr;
  if (!s) throw std::logic_error("internal: parameter not declared: " + key);
  return *s;
}

bool Params::has(const std::string& key) const {
  return set_ && set_->find(key) && flat_.contains(key) && !flat_.at(key).is_null();
}

const json& Params::raw(const std::string& key) const {
  spec(key);
  if (!has(key)) throw InputError(key, "is required here but was not set");
  return flat_.at(key);
}

double Params::real(const std::string& key) const { return raw(key).get<double>(); }
long Params::integer(const std::string& key) const { return raw(key).get<long>(); }
bool Params::boolean(const std::string& key) const { return raw(key).get<bool>(); }
std::string Params::text(const std::string& key) const { return raw(key).get<std::string>(); }

Eigen::VectorXd Params::vector(const std::string& key) const {
  const json& v = raw(key);
  if (v.is_number()) return Eigen::VectorXd::Constant(1, v.get<double>());
  Eigen::VectorXd out(static_cast<Eigen::Index>(v.size()));
  for (std::size_t i = 0; i < v.size(); ++i) out(static_cast<Eigen::Index>(i)) = v[i].get<double>();
  return out;
}

std::vector<long> Params::int_vector(const std::string& key) const {
  const json& v = raw(key);
  std::vector<long> out;
  for (const auto& x : v) out.push_back(x.get<long>());
  return out;
}

Eigen::MatrixXd Params::matrix(const std::string& key) const {
  const json& v = raw(key);
  const auto rows = static_cast<Eigen::Index>(v.size());
  const auto cols = static_cast<Eigen::Index>(rows ? v[0].size() : 0);
  Eigen::MatrixXd out(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) out(i, j) = v[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)].get<double>();
  return out;
}

json Params::nested() const {
  json out = json::object();
  for (const auto& s : set_->specs()) {
    json::json_pointer ptr("/" + [&] {
      std::string p = s.key;
      for (auto& c : p)
        if (c == '.') c = '/';
      return p;
    }());
    out[ptr] = flat_.contains(s.key) ? flat_.at(s.key) : json();
  }
  return out;
}

Params Params::with(const json& flat_overrides) const {
  json f = flat_;
  for (auto it = flat_overrides.begin(); it != flat_overrides.end(); ++it) {
    const ParamSpec* s = set_->find(it.key());
    if (!s) throw InputError(it.key(), "unknown key");
    f[it.key()] = check_value(*s, it.value());
  }
  std::set<std::string> given = given_;
  for (auto it = flat_overrides.begin(); it != flat_overrides.end(); ++it) given.insert(it.key());
  Params out(set_, std::move(f), std::move(given));
  check_conditions(out);
  return out;
}

void check_conditions(const Params& p) {
  for (const auto& s : p.set().specs()) {
    if (!s.applies || !p.given(s.key) || s.applies(p)) continue;
    std::string here;
    for (const auto& k : s.condition_keys) {
      const json& v = p.flat().contains(k) ? p.flat().at(k) : json();
      here += (here.empty() ? "" : ", ") + k + " = " + (v.is_string() ? v.get<std::string>() : v.dump());
    }
    throw InputError(s.key, "applies only when " + s.condition + (here.empty() ? "" : " (here " + here + ")") +
                                "; leave it unset or change the configuration");
  }
}

namespace {
bool is_utf8(const std::string& text) {
  try {
    (void)json(text).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}
}  // namespace

std::pair<std::string, json> parse_assignment(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("", "--set expects key=value, got '" + text + "'");
  std::string key = text.substr(0, eq);
  std::string val = text.substr(eq + 1);
  // Everything hdat writes (run.json, messages) is JSON text: bytes that are not UTF-8 are refused here.
  if (!is_utf8(text)) throw InputError(is_utf8(key) ? key : "", "--set: the assignment is not valid UTF-8 text");
  json v = json::parse(val, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) v = json(val);
  return {key, v};
}

json flatten_config(const json& nested, const ParamSet& set) {
  json flat = json::object();
  std::function<void(const json&, const std::string&)> walk = [&](const json& node, const std::string& prefix) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
      if (it.value().is_object() && !set.find(key)) walk(it.value(), key);
      else flat[key] = it.value();
    }
  };
  if (!nested.is_object()) throw InputError("", "the config file must hold a JSON object of key: value pairs");
  walk(nested, "");
  return flat;
}

namespace {
std::string close_keys(const ParamSet& set, const std::string& key) {
  std::string out;
  for (const auto& s : set.specs()) out += (out.empty() ? "" : ", ") + s.key;
  (void)key;
  return out;
}
}  // namespace

Params resolve(const ParamSet& set, const json& config, const std::vector<std::pair<std::string, json>>& assignments) {
  json flat = json::object();
  for (const auto& s : set.specs()) flat[s.key] = s.default_value;
  auto apply = [&](const std::string& key, const json& value, const char* origin) {
    const ParamSpec* s = set.find(key);
    if (!s) throw InputError(key, fmt::format("unknown key (from {}); allowed keys: {}", origin, close_keys(set, key)));
    flat[key] = check_value(*s, value);
  };
  if (!config.is_null()) {
    const json f = flatten_config(config, set);
    for (auto it = f.begin(); it != f.end(); ++it) apply(it.key(), it.value(), "--config");
  }
  std::set<std::string> given;
  if (!config.is_null()) {
    const json flat_config = flatten_config(config, set);
    for (auto it = flat_config.begin(); it != flat_config.end(); ++it) given.insert(it.key());
  }
  for (const auto& [k, v] : assignments) {
    apply(k, v, "--set");
    given.insert(k);
  }
  Params p(std::make_shared<const ParamSet>(set), std::move(flat), std::move(given));
  check_conditions(p);
  return p;
}

json read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("--config", "cannot read file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw InputError("--config", "file '" + path + "' is not valid JSON");
  if (!j.is_object()) throw InputError("--config", "file '" + path + "' must hold a JSON object");
  return j;
}

}  // namespace hdat
