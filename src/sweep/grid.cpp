#include "hdat/sweep/grid.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "hdat/core/error.hpp"
#include "hdat/core/suggest.hpp"

namespace hdat::sweep {

using json = nlohmann::json;

namespace {

const char* kGridForms = "expected key=start:stop:count, key=start:stop:count:log or key=[a,b,...]";

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

// A finite number, or nullopt.
std::optional<double> read_number(const std::string& text) {
  const std::string t = trim(text);
  double v = 0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || res.ec != std::errc() || res.ptr != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string strip_prefix(const InputError& e) {
  const std::string what = e.what(), prefix = "parameter '" + e.key() + "': ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

// A list item as given: JSON when it parses (numbers, lists, "quoted"), else the bare text.
json read_item(const std::string& text) {
  const std::string t = trim(text);
  json v = json::parse(t, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) {
    if (t.size() >= 2 && t.front() == '\'' && t.back() == '\'') return json(t.substr(1, t.size() - 2));
    return json(t);
  }
  return v;
}

}  // namespace

json Axis::to_json() const { return {{"key", key}, {"spec", spec}, {"values", values}, {"log", log}, {"numeric", numeric}}; }

std::vector<std::string> split_list(const std::string& body) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (char c : body) {
    if (quote) {
      cur += c;
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '[' || c == '{') ++depth;
    else if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !out.empty()) out.push_back(cur);
  return out;
}

Axis parse_axis(const std::string& text, const ParamSet& set) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError("--grid", fmt::format("'{}': {}", text, kGridForms));
  Axis a;
  a.key = trim(text.substr(0, eq));
  a.spec = trim(text.substr(eq + 1));
  const ParamSpec* spec = set.find(a.key);
  if (!spec)
    throw InputError(a.key, fmt::format("--grid {}: not a parameter of this model{} (see `hdat list MODEL`)", text, did_you_mean(a.key, set.keys())));
  if (a.spec.empty()) throw InputError(a.key, fmt::format("--grid {}: no values; {}", text, kGridForms));

  std::vector<json> raw;
  if (a.spec.front() == '[') {
    if (a.spec.back() != ']') throw InputError(a.key, fmt::format("--grid {}: the list is not closed by ']'; {}", text, kGridForms));
    // A JSON list when the whole thing parses (lists of lists for list-valued keys), else items split at
    // top-level commas (so that choices need no quotes: activation=[softmax,bayes]).
    json whole = json::parse(a.spec, nullptr, false);
    if (!whole.is_discarded() && whole.is_array()) {
      for (const auto& v : whole) raw.push_back(v);
    } else {
      for (const auto& item : split_list(a.spec.substr(1, a.spec.size() - 2))) {
        if (trim(item).empty()) throw InputError(a.key, fmt::format("--grid {}: empty list entry", text));
        raw.push_back(read_item(item));
      }
    }
    if (raw.empty()) throw InputError(a.key, fmt::format("--grid {}: the list is empty", text));
  } else {
    std::vector<std::string> parts;
    std::size_t from = 0;
    for (;;) {
      const auto c = a.spec.find(':', from);
      parts.push_back(a.spec.substr(from, c == std::string::npos ? std::string::npos : c - from));
      if (c == std::string::npos) break;
      from = c + 1;
    }
    if (parts.size() < 3 || parts.size() > 4) throw InputError(a.key, fmt::format("--grid {}: {}", text, kGridForms));
    if (parts.size() == 4 && trim(parts[3]) != "log")
      throw InputError(a.key, fmt::format("--grid {}: the fourth field may only be 'log', got '{}'", text, trim(parts[3])));
    if (spec->kind != ParamKind::real && spec->kind != ParamKind::integer)
      throw InputError(a.key, fmt::format("--grid {}: start:stop:count needs a number key ({} is a {}); give a list [a,b,...]", text,
                                          a.key, spec->kind_name()));
    const auto start = read_number(parts[0]), stop = read_number(parts[1]), count = read_number(parts[2]);
    if (!start) throw InputError(a.key, fmt::format("--grid {}: start '{}' is not a finite number", text, trim(parts[0])));
    if (!stop) throw InputError(a.key, fmt::format("--grid {}: stop '{}' is not a finite number", text, trim(parts[1])));
    if (!count || *count < 1 || *count != std::floor(*count) || *count > 1e7)
      throw InputError(a.key, fmt::format("--grid {}: count '{}' must be a whole number from 1 to 1e7", text, trim(parts[2])));
    a.log = parts.size() == 4;
    if (a.log && (*start <= 0 || *stop <= 0))
      throw InputError(a.key, fmt::format("--grid {}: a log grid needs start > 0 and stop > 0", text));
    const long n = static_cast<long>(*count);
    if (n == 1 && *start != *stop)
      throw InputError(a.key, fmt::format("--grid {}: count 1 needs start = stop (or give a list)", text));
    for (long i = 0; i < n; ++i) {
      const double f = n == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(n - 1);
      // End points exactly as given; log grids interpolate the logarithm.
      double v = i == 0 ? *start : i == n - 1 ? *stop
                 : a.log ? *start * std::pow(*stop / *start, f)  // exact for decades: 1:100:3:log gives 10
                         : *start + f * (*stop - *start);
      // Interior values to 15 significant digits, the grid as a person writes it (0:1:11 gives 0.6,
      // not 0.6000000000000001); the value run is the value written to sweep.csv.
      if (i != 0 && i != n - 1) v = std::stod(fmt::format("{:.15g}", v));
      if (spec->kind == ParamKind::integer) v = std::round(v);
      raw.emplace_back(v);
    }
  }

  for (const auto& v : raw) {
    try {
      a.values.push_back(check_value(*spec, v));
    } catch (const InputError& e) {
      throw InputError(a.key, fmt::format("--grid {}: value {}: {}", text, v.dump(), strip_prefix(e)));
    }
  }
  std::set<std::string> seen;
  for (const auto& v : a.values)
    if (!seen.insert(v.dump()).second)
      throw InputError(a.key, fmt::format("--grid {}: the value {} appears twice{}", text, v.dump(),
                                          spec->kind == ParamKind::integer && a.spec.front() != '[' ? " (integer key: values are rounded)" : ""));
  a.numeric = true;
  for (const auto& v : a.values) a.numeric = a.numeric && v.is_number();
  return a;
}

std::size_t grid_size(const std::vector<Axis>& axes) {
  std::size_t n = 1;
  for (const auto& a : axes) n *= a.values.size();
  return n;
}

std::string describe(const json& overrides) {
  std::string s;
  for (auto it = overrides.begin(); it != overrides.end(); ++it)
    s += (s.empty() ? "" : ", ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  return s;
}

std::string point_hash(const std::string& model, const std::string& command, const Params& params) {
  // FNV-1a over a canonical text: json objects keep their keys sorted and dump doubles in the shortest
  // form that reads back exactly, and check_value made every value canonical.
  const std::string text = "hdat-sweep-point/1\n" + model + "\n" + command + "\n" + params.flat().dump();
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

std::vector<Point> make_points(const ModelEntry& model, const std::string& command, const Params& base, const std::vector<Axis>& axes) {
  std::set<std::string> keys;
  for (const auto& a : axes)
    if (!keys.insert(a.key).second) throw InputError(a.key, "is swept by two --grid options; give it once");
  const std::size_t n = grid_size(axes);
  if (n > 10'000'000) throw InputError("--grid", fmt::format("the grid has {} points; at most 10^7", n));
  std::vector<Point> points(n);
  std::map<std::string, std::size_t> by_hash;
  for (std::size_t i = 0; i < n; ++i) {
    Point& p = points[i];
    p.index = i;
    p.overrides = json::object();
    // First axis slowest: index = ((i0 * n1) + i1) * n2 + i2 ...
    std::size_t rest = i;
    std::vector<std::size_t> at(axes.size());
    for (std::size_t k = axes.size(); k-- > 0;) {
      at[k] = rest % axes[k].values.size();
      rest /= axes[k].values.size();
    }
    for (std::size_t k = 0; k < axes.size(); ++k) p.overrides[axes[k].key] = axes[k].values[at[k]];
    try {
      p.params = base.with(p.overrides);
      if (model.check) model.check(p.params);
      // Checked now, bound again when computed: a large grid would otherwise hold every point's
      // bound model (and the theories it builds) until the sweep ends.
      p.params = p.params.without_binding();
    } catch (const InputError& e) {
      throw InputError(e.key(), fmt::format("{} (at grid point {})", strip_prefix(e), describe(p.overrides)));
    }
    p.hash = point_hash(model.name, command, p.params);
    if (auto [it, fresh] = by_hash.emplace(p.hash, i); !fresh)
      throw InputError("--grid", fmt::format("grid points {} and {} are the same run", describe(points[it->second].overrides),
                                             describe(p.overrides)));
  }
  return points;
}

}  // namespace hdat::sweep
