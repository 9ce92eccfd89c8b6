#include "hdat/sweep/observable.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "hdat/core/error.hpp"
#include "hdat/core/constants.hpp"
#include "hdat/core/suggest.hpp"

namespace hdat::sweep {

using json = nlohmann::json;

namespace {


const char* kObservableForms =
    "expected final:COL, last:COL, min:COL, max:COL, argmin:COL, argmax:COL, at:X:COL, cross:COL:V, info:PATH, "
    "table:FILE.csv:<one of the column forms>, or a bare NAME; optionally prefixed by label=";

std::vector<std::string> split_colon(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const auto c = s.find(':', from);
    out.push_back(s.substr(from, c == std::string::npos ? std::string::npos : c - from));
    if (c == std::string::npos) return out;
    from = c + 1;
  }
}

bool read_double(const std::string& t, double& v) {
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  return !t.empty() && res.ec == std::errc() && res.ptr == t.data() + t.size() && std::isfinite(v);
}

[[noreturn]] void malformed(const std::string& text, const std::string& why) {
  const bool suggestion = !why.empty() && why.back() == '?';  // "...; did you mean 'final'?": the forms in parentheses
  if (suggestion) throw InputError("--observable", fmt::format("'{}': {} ({})", text, why, kObservableForms));
  throw InputError("--observable", fmt::format("'{}': {}; {}", text, why, kObservableForms));
}

// Parse a column form (no label, no table prefix) into o.
void parse_column_form(const std::string& text, const std::vector<std::string>& f, Observable& o) {
  auto need = [&](std::size_t n) {
    if (f.size() != n) malformed(text, fmt::format("'{}' takes {} field(s) after it", f[0], n - 1));
    for (const auto& x : f)
      if (x.empty()) malformed(text, "empty field");
  };
  const std::string& head = f[0];
  if (head == "final" || head == "last") {
    need(2);
    o.kind = Observable::Kind::final;
    o.column = f[1];
  } else if (head == "min" || head == "max" || head == "argmin" || head == "argmax") {
    need(2);
    o.kind = head == "min" ? Observable::Kind::min : head == "max" ? Observable::Kind::max
             : head == "argmin" ? Observable::Kind::argmin : Observable::Kind::argmax;
    o.column = f[1];
  } else if (head == "at") {
    need(3);
    if (!read_double(f[1], o.x)) malformed(text, fmt::format("'{}' is not a finite number", f[1]));
    o.kind = Observable::Kind::at;
    o.column = f[2];
  } else if (head == "cross") {
    need(3);
    if (!read_double(f[2], o.x)) malformed(text, fmt::format("'{}' is not a finite number", f[2]));
    o.kind = Observable::Kind::cross;
    o.column = f[1];
  } else {
    malformed(text, fmt::format("unknown form '{}'{}", head,
                                did_you_mean(head, {"final", "last", "min", "max", "argmin", "argmax", "at", "cross", "info", "table"})));
  }
}

std::string column_label(const Observable& o, const std::vector<std::string>& f) {
  switch (o.kind) {
    case Observable::Kind::final: return "final_" + o.column;
    case Observable::Kind::min: return "min_" + o.column;
    case Observable::Kind::max: return "max_" + o.column;
    case Observable::Kind::argmin: return "argmin_" + o.column;
    case Observable::Kind::argmax: return "argmax_" + o.column;
    case Observable::Kind::at: return o.column + "_at_" + f[1];
    case Observable::Kind::cross: return "cross_" + o.column + "_" + f[2];
    default: return o.column;
  }
}

double number_of(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return kNaN;  // null (a NaN written by nlohmann), strings, objects
}

// Walk a dotted path; at an object, the longest run of segments that names a key wins (keys may
// contain dots), at an array a segment is an index.
const json* walk(const json& node, const std::vector<std::string>& seg, std::size_t from) {
  if (from == seg.size()) return &node;
  if (node.is_object()) {
    for (std::size_t to = seg.size(); to > from; --to) {
      std::string key = seg[from];
      for (std::size_t k = from + 1; k < to; ++k) key += "." + seg[k];
      auto it = node.find(key);
      if (it != node.end())
        if (const json* r = walk(*it, seg, to)) return r;
    }
    return nullptr;
  }
  if (node.is_array()) {
    std::size_t i = 0;
    const std::string& s = seg[from];
    const auto res = std::from_chars(s.data(), s.data() + s.size(), i);
    if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size() || i >= node.size()) return nullptr;
    return walk(node[i], seg, from + 1);
  }
  return nullptr;
}

const json* info_node(const json& info, const std::string& path) {
  std::vector<std::string> seg;
  std::size_t from = 0;
  for (;;) {
    const auto d = path.find('.', from);
    seg.push_back(path.substr(from, d == std::string::npos ? std::string::npos : d - from));
    if (d == std::string::npos) break;
    from = d + 1;
  }
  return walk(info, seg, 0);
}

double info_value(const json& info, const std::string& path) {
  const json* v = info_node(info, path);
  return v ? number_of(*v) : kNaN;
}

double reduce(const Observable& o, const Table& t) {
  const int c = t.column_index(o.column);
  if (c < 0 || t.empty() || t.columns().empty()) return kNaN;
  const std::size_t n = t.rows();
  const std::string& xcol = t.columns().front();
  auto y = [&](std::size_t i) { return t.number(i, o.column); };
  auto x = [&](std::size_t i) { return t.number(i, xcol); };
  switch (o.kind) {
    case Observable::Kind::final: return y(n - 1);
    case Observable::Kind::min:
    case Observable::Kind::max:
    case Observable::Kind::argmin:
    case Observable::Kind::argmax: {
      const bool want_min = o.kind == Observable::Kind::min || o.kind == Observable::Kind::argmin;
      double best = kNaN;
      std::size_t at = n;
      for (std::size_t i = 0; i < n; ++i) {
        const double v = y(i);
        if (std::isnan(v)) continue;
        if (at == n || (want_min ? v < best : v > best)) best = v, at = i;
      }
      if (at == n) return kNaN;
      return (o.kind == Observable::Kind::min || o.kind == Observable::Kind::max) ? best : x(at);
    }
    case Observable::Kind::at: {
      for (std::size_t i = 0; i < n; ++i) {
        if (x(i) == o.x) return y(i);
        if (i + 1 < n && x(i) < o.x && o.x < x(i + 1)) {
          const double f = (o.x - x(i)) / (x(i + 1) - x(i));
          return y(i) + f * (y(i + 1) - y(i));
        }
      }
      return kNaN;
    }
    case Observable::Kind::cross: {
      if (y(0) == o.x) return x(0);
      for (std::size_t i = 0; i + 1 < n; ++i) {
        const double a = y(i) - o.x, b = y(i + 1) - o.x;
        if (std::isnan(a) || std::isnan(b)) continue;
        if (b == 0 || (a < 0) != (b < 0)) return x(i) + (x(i + 1) - x(i)) * a / (a - b);
      }
      return kNaN;
    }
    default: return kNaN;
  }
}

}  // namespace

Observable parse_observable(const std::string& text) {
  Observable o;
  std::string body = text;
  const auto eq = text.find('=');
  if (eq != std::string::npos) {
    o.label = text.substr(0, eq);
    body = text.substr(eq + 1);
    if (o.label.empty() || o.label.find(':') != std::string::npos) malformed(text, "the label before '=' must be a plain name");
  }
  if (body.empty()) malformed(text, "empty");
  if (body.find_first_of(" ,\"\n") != std::string::npos) malformed(text, "spaces, commas and quotes are not allowed");
  o.spec = body;
  std::vector<std::string> f = split_colon(body);
  std::string default_label;
  if (f.size() == 1) {
    o.kind = Observable::Kind::bare;
    o.column = body;
    default_label = body;
  } else if (f[0] == "info") {
    if (f.size() != 2 || f[1].empty()) malformed(text, "info:PATH takes one dotted path (e.g. info:events.plateau_end)");
    o.kind = Observable::Kind::info;
    o.column = f[1];
    default_label = f[1];
  } else if (f[0] == "table") {
    if (f.size() < 4 || f[1].empty()) malformed(text, "table:FILE.csv:FORM needs a file and a column form (e.g. table:prune.csv:last:risk)");
    o.table = f[1];
    const std::vector<std::string> rest(f.begin() + 2, f.end());
    parse_column_form(text, rest, o);
    std::string stem = o.table;
    if (stem.size() > 4 && stem.substr(stem.size() - 4) == ".csv") stem.resize(stem.size() - 4);
    default_label = stem + "_" + column_label(o, rest);
  } else {
    parse_column_form(text, f, o);
    default_label = column_label(o, f);
  }
  if (o.label.empty()) o.label = default_label;
  return o;
}

std::string main_table_name(const std::string& command, const std::map<std::string, Table>& tables) {
  const std::string preferred = command == "curve" ? "curve.csv" : command == "simulate" ? "sim.csv"
                                : command == "validate" ? "validate.csv" : command + ".csv";
  if (tables.count(preferred)) return preferred;
  return tables.empty() ? "" : tables.begin()->first;
}

double evaluate(const Observable& o, const std::string& command, const std::map<std::string, Table>& tables, const json& info) {
  if (o.kind == Observable::Kind::info) return info_value(info, o.column);
  const std::string name = o.table.empty() ? main_table_name(command, tables) : o.table;
  auto it = tables.find(name);
  if (o.kind == Observable::Kind::bare) {
    if (it != tables.end() && it->second.has_column(o.column)) {
      Observable f = o;
      f.kind = Observable::Kind::final;
      return reduce(f, it->second);
    }
    const double v = info_value(info, o.column);
    // Models may gather their scalar results in info.observables (the sinks model does).
    return std::isnan(v) && info.contains("observables") ? info_value(info["observables"], o.column) : v;
  }
  if (it == tables.end()) return kNaN;
  return reduce(o, it->second);
}

std::string missing(const Observable& o, const std::string& command, const std::map<std::string, Table>& tables, const json& info) {
  std::vector<std::string> keys;
  for (auto it = info.begin(); info.is_object() && it != info.end(); ++it) keys.push_back(it.key());
  // An entry below a top-level one may be absent at some parameters (an event that did not happen): only
  // the top level is required, so that one point's missing event does not stop a sweep.
  auto top_level_known = [&](const std::string& path) {
    for (const auto& k : keys)
      if (path == k || path.rfind(k + ".", 0) == 0) return true;
    return false;
  };
  if (o.kind == Observable::Kind::info) {
    if (top_level_known(o.column)) return "";
    // the nearest top-level entry in place of the path's first part (evnets.plateau_end -> events.plateau_end)
    const auto dot = o.column.find('.');
    const std::string head = o.column.substr(0, dot), rest = dot == std::string::npos ? "" : o.column.substr(dot);
    const auto near = nearest(head, keys);
    return fmt::format("no entry '{}' in {}'s run.json{}", o.column, command,
                       near ? fmt::format("; did you mean '{}{}'? (its top-level entries: {})", *near, rest, fmt::join(keys, ", "))
                            : did_you_mean_among(head, keys, "its top-level entries"));
  }
  const std::string name = o.table.empty() ? main_table_name(command, tables) : o.table;
  auto it = tables.find(name);
  const bool has_column = it != tables.end() && it->second.has_column(o.column);
  if (o.kind == Observable::Kind::bare) {
    if (has_column || top_level_known(o.column) || (info.contains("observables") && info_node(info["observables"], o.column))) return "";
    std::vector<std::string> names = it != tables.end() ? it->second.columns() : std::vector<std::string>{};
    names.insert(names.end(), keys.begin(), keys.end());
    return fmt::format("'{}' is neither a column of {} nor an entry of run.json{}", o.column, name.empty() ? command + "'s table" : name,
                       did_you_mean_among(o.column, names, "allowed"));
  }
  if (it == tables.end()) {
    std::vector<std::string> names;
    for (const auto& [n, t] : tables) names.push_back(n);
    return fmt::format("{} writes no table '{}'{}", command, name, did_you_mean_among(name, names, "its tables"));
  }
  if (!has_column)
    return fmt::format("no column '{}' in {}{}", o.column, name, did_you_mean_among(o.column, it->second.columns(), "its columns"));
  return "";
}

}  // namespace hdat::sweep
