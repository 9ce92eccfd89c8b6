#include <algorithm>
#include "hdat/core/params.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <fstream>
#include <sstream>

#include "hdat/core/suggest.hpp"

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

ParamSet& ParamSet::theory_only() {
  if (specs_.empty()) throw std::logic_error("ParamSet::theory_only: no parameter declared yet");
  specs_.back().changes_simulation = false;
  return *this;
}

ParamSet& ParamSet::theory_only(const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    auto it = std::find_if(specs_.begin(), specs_.end(), [&](const ParamSpec& s) { return s.key == key; });
    if (it == specs_.end()) throw std::logic_error("ParamSet::theory_only: parameter not declared: " + key);
    it->changes_simulation = false;
  }
  return *this;
}

ParamSet& ParamSet::merge(const ParamSet& other) {
  for (const auto& s : other.specs())
    if (!find(s.key)) specs_.push_back(s);
  for (const auto& r : other.retired_)
    if (!retired(r.first)) retired_.push_back(r);
  return *this;
}

ParamSet& ParamSet::retire(const std::string& key, std::string instead) {
  retired_.emplace_back(key, std::move(instead));
  return *this;
}

const std::string* ParamSet::retired(const std::string& key) const {
  for (const auto& r : retired_)
    if (r.first == key) return &r.second;
  return nullptr;
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
    throw InputError(spec.key, fmt::format("{}must be {} (got {})", where.empty() ? "" : where.substr(1) + " ", spec.range.describe(), shown(v)));
  return x;
}

// Integer keys are read as C++ ints (sizes, counts, seeds): a value beyond int's range would wrap
// around into a wrong size, so it is refused here, for every model.
json integer_in_range(const ParamSpec& spec, const json& v, const std::string& where) {
  if (!v.is_number()) throw InputError(spec.key, fmt::format("expected an integer{}, got {}", where, shown(v)));
  const double x = v.get<double>();
  constexpr double lo = std::numeric_limits<int>::min(), hi = std::numeric_limits<int>::max();
  if (std::floor(x) != x) throw InputError(spec.key, fmt::format("expected an integer{}, got {}", where, shown(v)));
  number_in_range(spec, v, where);  // first the key's own range: the message then says what the key allows
  if (x < lo || x > hi)
    throw InputError(spec.key, fmt::format("{}must be an integer in [{}, {}] (got {})", where.empty() ? "" : where.substr(1) + " ",
                                           static_cast<long>(lo), static_cast<long>(hi), shown(v)));
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
      throw InputError(spec.key, "expected one of " + allowed + ", got " + shown(value) + did_you_mean(value.get<std::string>(), spec.choices));
    }
    case ParamKind::real_list:
    case ParamKind::int_list: {
      if (!value.is_array()) throw InputError(spec.key, fmt::format("expected a {} such as [1, 2], got {}", spec.kind_name(), shown(value)));
      // No model reads an empty list as anything but a mistake (no time to observe, no size to
      // compare, no λ to scan): refused here, for every list key of every model.
      if (value.empty()) throw InputError(spec.key, "must hold at least one entry (leave the key out rather than give an empty list)");
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
    if (!s) throw InputError(it.key(), set_->retired(it.key()) ? "no longer a key: " + *set_->retired(it.key())
                                                               : "unknown key" + did_you_mean(it.key(), set_->keys()));
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
    throw InputError("", "--set expects key=value as one word (e.g. --set " + (eq == 0 || text.empty() ? std::string("eta") : text) +
                             "=0.5), got '" + text + "'");
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
// The nearest key first (a misspelling), then every key.
std::string unknown_key(const ParamSet& set, const std::string& key, const char* origin) {
  if (const std::string* instead = set.retired(key)) return fmt::format("no longer a key (from {}): {}", origin, *instead);
  return fmt::format("unknown key (from {}){}", origin, did_you_mean_among(key, set.keys(), "allowed keys"));
}
}  // namespace

Params resolve(const ParamSet& set, const json& config, const std::vector<std::pair<std::string, json>>& assignments) {
  json flat = json::object();
  for (const auto& s : set.specs()) flat[s.key] = s.default_value;
  auto apply = [&](const std::string& key, const json& value, const char* origin) {
    const ParamSpec* s = set.find(key);
    if (!s) throw InputError(key, unknown_key(set, key, origin));
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

namespace {
// Line and column (1-based, columns in bytes) of the character at `offset`, and that line's text.
struct TextPosition {
  std::size_t line = 1, column = 1;
  std::string text;
};
TextPosition position_of(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  TextPosition p;
  std::size_t start = 0;
  for (std::size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') ++p.line, start = i + 1;
  p.column = offset - start + 1;
  const std::size_t end = text.find('\n', start);
  p.text = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!p.text.empty() && p.text.back() == '\r') p.text.pop_back();
  if (p.text.size() > 70) p.text = p.text.substr(0, 67) + "...";
  return p;
}

// Shown as plain ASCII: a message is text whatever bytes the file holds.
std::string ascii(std::string s) {
  for (auto& c : s)
    if (static_cast<unsigned char>(c) >= 0x80 || c == '\t') c = c == '\t' ? ' ' : '?';
  return s;
}

// nlohmann's reason without its own prefix ("[json.exception.parse_error.101] parse error at line 2,
// column 9: syntax error while parsing object - "), which repeats what the message says already.
std::string parse_reason(const std::string& what) {
  if (const auto dash = what.find(" - "); dash != std::string::npos) return what.substr(dash + 3);
  if (const auto colon = what.rfind(": "); colon != std::string::npos) return what.substr(colon + 2);
  return what;
}

bool structural(char c) { return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':'; }
bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the offending token starts. nlohmann reports the last character it read (`last`, 0-based):
// the end of a complete token the parser did not expect (a string's closing quote, a number's last
// digit, a bracket), or the character where a literal, number or string went wrong (lexer errors,
// "last read: ..."). At the end of the text: just after its last visible character.
std::size_t token_start(const std::string& text, std::size_t last, bool lexer_error, bool at_end) {
  if (at_end || last >= text.size()) {
    std::size_t end = text.size();
    while (end > 0 && blank(text[end - 1])) --end;
    return end;
  }
  std::size_t i = last;
  if (lexer_error) {
    if (i > 0 && (structural(text[i]) || blank(text[i]))) --i;  // the character that ended the bad token
    while (i > 0 && !structural(text[i - 1]) && !blank(text[i - 1])) --i;
    return i;
  }
  if (text[i] == '"') {  // back to the opening quote (a quote after an odd run of backslashes is escaped)
    while (i > 0) {
      --i;
      std::size_t slashes = 0;
      while (i >= slashes + 1 && text[i - slashes - 1] == '\\') ++slashes;
      if (text[i] == '"' && slashes % 2 == 0) break;
    }
    return i;
  }
  if (structural(text[i])) return i;
  while (i > 0 && !structural(text[i - 1]) && !blank(text[i - 1]) && text[i - 1] != '"') --i;
  return i;
}
}  // namespace

json parse_json_input(const std::string& text, const std::string& key, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string reason = parse_reason(e.what());
    const bool lexer_error = reason.find("; last read:") != std::string::npos;
    if (lexer_error) reason.erase(reason.find("; last read:"));  // nlohmann's buffer, not the token: the line is shown instead
    const std::size_t last = e.byte == 0 ? 0 : e.byte - 1;  // e.byte counts the characters read
    const std::size_t start = token_start(text, last, lexer_error, reason.find("end of input") != std::string::npos);
    const TextPosition p = position_of(text, start);
    throw InputError(key, fmt::format("{} is not valid JSON: line {}, column {}: {} (the line: `{}`)", what, p.line, p.column,
                                      ascii(reason), ascii(p.text)));
  } catch (const json::exception& e) {  // a number beyond double (out_of_range 406): no position, the number is named
    const std::string w = e.what();
    const auto bracket = w.find("] ");
    throw InputError(key, fmt::format("{} is not valid JSON: {}", what, ascii(bracket == std::string::npos ? w : w.substr(bracket + 2))));
  }
}

json read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("--config", "cannot read file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = parse_json_input(ss.str(), "--config", "file '" + path + "'");
  if (!j.is_object()) throw InputError("--config", "file '" + path + "' must hold a JSON object");
  return j;
}

}  // namespace hdat
