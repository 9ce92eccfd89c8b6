#include "hdat/geometry/maps.hpp"

#include <fmt/format.h>

#include <cmath>
#include <algorithm>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "hdat/core/error.hpp"
#include "hdat/core/params.hpp"

namespace hdat::geometry {

namespace {

// Layers and heads index dense per-(layer, head) tables of the analysis, positions its per-query
// bins: bounded so that a stray number is an input error, not an allocation of terabytes.
constexpr long kMaxLayerOrHead = 4095, kMaxPosition = 1L << 20, kMaxCells = 1L << 16;

long non_negative_integer(const nlohmann::json& m, const char* key, const std::string& where, std::size_t k, long max) {
  if (!m.contains(key)) throw InputError(where, fmt::format("map {}: missing \"{}\"", k, key));
  const auto& v = m.at(key);
  if (!v.is_number_integer() || v.get<long>() < 0 || v.get<long>() > max)
    throw InputError(where, fmt::format("map {}: \"{}\" must be an integer in [0, {}], got {}", k, key, max,
                                        v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return v.get<long>();
}

double finite_number(const nlohmann::json& v, const std::string& where, const std::string& what) {
  if (!v.is_number()) throw InputError(where, fmt::format("{} must be a number, got {}", what, v.dump()));
  const double x = v.get<double>();
  if (!std::isfinite(x)) throw InputError(where, fmt::format("{} is not finite", what));
  return x;
}

}  // namespace

std::vector<AttentionMap> parse_maps(const nlohmann::json& doc, const std::string& where) {
  if (!doc.is_object() || !doc.contains("maps"))
    throw InputError(where, "expected a JSON object {\"maps\": [...]}");
  const auto& list = doc.at("maps");
  if (!list.is_array() || list.empty()) throw InputError(where, "\"maps\" must be a non-empty list of maps");
  static const std::set<std::string> known = {"layer", "head", "query", "alpha", "values", "sink", "document"};
  std::vector<AttentionMap> maps;
  maps.reserve(list.size());
  for (std::size_t k = 0; k < list.size(); ++k) {
    const auto& m = list[k];
    if (!m.is_object()) throw InputError(where, fmt::format("map {} is not a JSON object", k));
    for (auto it = m.begin(); it != m.end(); ++it)
      if (!known.count(it.key()))
        throw InputError(where, fmt::format("map {}: unknown key \"{}\" (allowed: layer, head, query, alpha, values, sink, document)", k, it.key()));
    AttentionMap a;
    a.layer = static_cast<int>(non_negative_integer(m, "layer", where, k, kMaxLayerOrHead));
    a.head = static_cast<int>(non_negative_integer(m, "head", where, k, kMaxLayerOrHead));
    a.query = static_cast<int>(non_negative_integer(m, "query", where, k, kMaxPosition));
    const long n = a.query + 1L;
    if (!m.contains("alpha") || !m.at("alpha").is_array())
      throw InputError(where, fmt::format("map {}: \"alpha\" must be a list of t + 1 = {} weights", k, n));
    const auto& al = m.at("alpha");
    if (static_cast<long>(al.size()) != n)
      throw InputError(where, fmt::format("map {}: \"alpha\" has {} entries, but query {} sees {} sources (0..{})", k, al.size(), a.query, n, a.query));
    a.alpha.resize(n);
    for (long i = 0; i < n; ++i) {
      a.alpha(i) = finite_number(al[i], where, fmt::format("map {}: alpha[{}]", k, i));
      if (a.alpha(i) < 0) throw InputError(where, fmt::format("map {}: alpha[{}] = {} is negative", k, i, a.alpha(i)));
    }
    if (!m.contains("values") || !m.at("values").is_array())
      throw InputError(where, fmt::format("map {}: \"values\" must be a list of {} vectors", k, n));
    const auto& vs = m.at("values");
    if (static_cast<long>(vs.size()) != n)
      throw InputError(where, fmt::format("map {}: \"values\" has {} vectors, but \"alpha\" has {} weights", k, vs.size(), n));
    if (!vs[0].is_array() || vs[0].empty()) throw InputError(where, fmt::format("map {}: values[0] must be a non-empty list", k));
    const std::size_t width = vs[0].size();
    a.values.resize(static_cast<Eigen::Index>(width), n);
    for (long i = 0; i < n; ++i) {
      if (!vs[i].is_array() || vs[i].size() != width)
        throw InputError(where, fmt::format("map {}: values[{}] has width {}, values[0] has width {}", k, i,
                                            vs[i].is_array() ? vs[i].size() : 0, width));
      for (std::size_t c = 0; c < width; ++c)
        a.values(static_cast<Eigen::Index>(c), i) = finite_number(vs[i][c], where, fmt::format("map {}: values[{}][{}]", k, i, c));
    }
    if (m.contains("sink")) {
      a.sink = static_cast<int>(non_negative_integer(m, "sink", where, k, kMaxPosition));
      if (a.sink > a.query) throw InputError(where, fmt::format("map {}: sink {} is not a visible source (0..{})", k, a.sink, a.query));
    }
    if (m.contains("document")) a.document = non_negative_integer(m, "document", where, k, std::numeric_limits<long>::max());
    maps.push_back(std::move(a));
  }
  // The analysis tabulates every (layer, head) cell up to the largest indices: bound their product.
  long layers = 0, heads = 0;
  for (const auto& a : maps) layers = std::max<long>(layers, a.layer + 1L), heads = std::max<long>(heads, a.head + 1L);
  if (layers * heads > kMaxCells)
    throw InputError(where, fmt::format("layers x heads = {} x {} exceeds {} cells (layer and head are indices from 0)", layers, heads,
                                        kMaxCells));
  return maps;
}

std::vector<AttentionMap> read_maps(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("--maps", "cannot read file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto doc = parse_json_input(ss.str(), "--maps", "file '" + path + "'");  // line and column when malformed
  return parse_maps(doc, "--maps");
}

nlohmann::json maps_to_json(const std::vector<AttentionMap>& maps) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& a : maps) {
    nlohmann::json m;
    m["layer"] = a.layer;
    m["head"] = a.head;
    m["query"] = a.query;
    m["alpha"] = std::vector<double>(a.alpha.data(), a.alpha.data() + a.alpha.size());
    nlohmann::json vs = nlohmann::json::array();
    for (Eigen::Index i = 0; i < a.values.cols(); ++i) {
      const Eigen::VectorXd v = a.values.col(i);
      vs.push_back(std::vector<double>(v.data(), v.data() + v.size()));
    }
    m["values"] = std::move(vs);
    if (a.sink >= 0) m["sink"] = a.sink;
    if (a.document >= 0) m["document"] = a.document;
    list.push_back(std::move(m));
  }
  return {{"maps", list}};
}

}  // namespace hdat::geometry
