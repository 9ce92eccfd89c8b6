#include "hdat/geometry/engine.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>

#include "hdat/core/error.hpp"

namespace hdat::geometry::detail {

Settings Settings::from(const Params& p, const RunContext& ctx) {
  Settings s;
  s.curve.n_max = static_cast<int>(p.integer("n_max"));
  s.curve.random_repeats = static_cast<int>(p.integer("random_repeats"));
  s.curve.ranking = parse_ranking(p.text("ranking"), "ranking");
  s.curve.tie = Tie::earlier;  // the spec's top-N rule; the taxonomy's tie rule is a setting
  s.sink = static_cast<int>(p.integer("sink"));
  s.taxonomy.sink = s.sink;
  s.taxonomy.tie = parse_tie(p.text("taxonomy.tie"), "taxonomy.tie");
  s.taxonomy.winner_margin = p.real("taxonomy.winner_margin");
  s.taxonomy.min_share = p.real("taxonomy.min_share");
  s.bootstrap = static_cast<int>(p.integer("bootstrap"));
  s.confidence = p.real("confidence");
  s.seed = static_cast<std::uint64_t>(p.integer("seed"));
  for (long e : p.int_vector("queries.bins")) s.bin_edges.push_back(static_cast<int>(e));
  for (std::size_t i = 1; i < s.bin_edges.size(); ++i)
    if (s.bin_edges[i] <= s.bin_edges[i - 1]) throw InputError("queries.bins", "edges must increase strictly, e.g. [1, 4, 16, 64, 128]");
  if (s.bin_edges.empty()) throw InputError("queries.bins", "needs at least one edge, e.g. [1]");
  s.threads = ctx.threads > 0 ? ctx.threads : omp_get_max_threads();
  s.quiet = ctx.quiet;
  return s;
}

void Layout::set_n_values(int n_max) {
  n_values.clear();
  for (long N = 1; N <= n_max; N *= 2) n_values.push_back(static_cast<int>(N));
}

void Layout::add_slot(int layer, int head, int query) {
  const std::array<int, 3> key{layer, head, query};
  if (index.count(key)) return;
  index[key] = 0;
  layers = std::max(layers, layer + 1);
  heads = std::max(heads, head + 1);
  max_query = std::max(max_query, query);
}

void Layout::finish(const std::vector<int>& edges) {
  slots.clear();
  int i = 0;
  for (auto& [key, pos] : index) {
    pos = i++;
    slots.push_back(key);
  }
  bin_edges = edges;
  groups = {"final"};
  for (std::size_t b = 0; b < edges.size(); ++b) {
    const int hi = b + 1 < edges.size() ? edges[b + 1] - 1 : max_query;
    groups.push_back(edges[b] == hi ? fmt::format("{}", hi) : fmt::format("{}-{}", edges[b], hi));
  }
  groups.push_back("all");
}

int Layout::slot(int layer, int head, int query) const {
  const auto it = index.find({layer, head, query});
  if (it == index.end()) throw std::logic_error("internal: unknown slot");
  return it->second;
}

int Layout::group_of_bin(int query) const {
  int g = -1;
  for (std::size_t b = 0; b < bin_edges.size(); ++b)
    if (query >= bin_edges[b]) g = 1 + static_cast<int>(b);
  return g;
}

UnitAccumulator::UnitAccumulator(const Layout& l, const Settings& s) : layout(l), settings(s) {
  const std::size_t S = l.slots.size(), K = l.nk(), G = l.group_count(), LH = static_cast<std::size_t>(l.layers) * l.heads;
  slot_sum.assign(S * K * kDistances * 2 * kMetrics, 0.0);
  slot_count.assign(S * K * kDistances * 2, 0);
  group_sum.assign(G * K * kDistances * kSels * kMetrics, 0.0);
  group_count.assign(G * K * kDistances * kSels, 0);
  sink_top.assign(G * K, 0.0);
  sink_top_n.assign(G * K, 0);
  roles.assign(LH * G * kRoles, 0);
  previous.assign(LH, 0);
  head_sink.assign(LH * 5, 0.0);
  head_sink_n.assign(LH, 0);
}

namespace {
void add_metrics(double* dst, const SetMetrics& m) {
  dst[0] += m.precision;
  dst[1] += m.recall;
  dst[2] += m.F;
  dst[3] += m.margin;
  dst[4] += m.ginv;
}
}  // namespace

void UnitAccumulator::add_map(const MapInput& m, std::uint64_t unit) {
  const int K = layout.nk();
  rng::Engine engine = rng::engine(settings.seed, unit, kRandomSets + m.stream);
  CurveOptions o = settings.curve;
  o.exclude = -1;
  geo_.evaluate(m.alpha, m.values, o, &engine, curves_);
  const bool sink_visible = m.sink >= 0 && m.sink < m.alpha.size();
  if (sink_visible) {
    CurveOptions x = settings.curve;
    x.exclude = m.sink;
    x.random_repeats = 0;
    geo_.evaluate(m.alpha, m.values, x, nullptr, nosink_);
  } else {
    nosink_.N.clear();
  }
  // Rank of the sink in the top-N order (ties to the earlier index, as the selection).
  int sink_rank = -1;
  if (sink_visible) {
    auto key = [&](int i) { return o.ranking == Ranking::attention ? m.alpha(i) : m.alpha(i) * m.values.col(i).norm(); };
    const double ks = key(m.sink);
    sink_rank = 0;
    for (int i = 0; i < m.alpha.size(); ++i) sink_rank += key(i) > ks || (key(i) == ks && i < m.sink);
  }

  std::vector<int> groups = {layout.all_group()};
  if (m.final) groups.push_back(layout.final_group());
  if (const int b = layout.group_of_bin(m.query); b > 0) groups.push_back(b);
  const int slot = layout.slot(m.layer, m.head, m.query);
  for (std::size_t k = 0; k < curves_.N.size(); ++k)
    for (int d = 0; d < kDistances; ++d) {
      const bool has_random = !curves_.random[d].empty();
      const std::size_t sc = ((static_cast<std::size_t>(slot) * K + k) * kDistances + d) * 2;
      add_metrics(&slot_sum[(sc + top) * kMetrics], curves_.top[d][k]);
      slot_count[sc + top]++;
      if (has_random) {
        add_metrics(&slot_sum[(sc + random) * kMetrics], curves_.random[d][k]);
        slot_count[sc + random]++;
      }
      for (int g : groups) {
        const std::size_t gc = ((static_cast<std::size_t>(g) * K + k) * kDistances + d) * kSels;
        add_metrics(&group_sum[(gc + top) * kMetrics], curves_.top[d][k]);
        group_count[gc + top]++;
        if (has_random) {
          add_metrics(&group_sum[(gc + random) * kMetrics], curves_.random[d][k]);
          group_count[gc + random]++;
        }
        if (k < nosink_.N.size()) {
          add_metrics(&group_sum[(gc + top_nosink) * kMetrics], nosink_.top[d][k]);
          group_count[gc + top_nosink]++;
        }
      }
    }
  if (sink_visible)
    for (std::size_t k = 0; k < curves_.N.size(); ++k)
      for (int g : groups) {
        sink_top[static_cast<std::size_t>(g) * K + k] += sink_rank < curves_.N[k];
        sink_top_n[static_cast<std::size_t>(g) * K + k]++;
      }
  if (m.final && sink_visible && m.alpha.size() >= 2) {
    const SinkGeometry sg = sink_geometry(m.values, m.sink, m.query);
    const std::size_t h = static_cast<std::size_t>(m.layer) * layout.heads + m.head;
    const double row[5] = {sg.norm_ratio, sg.norm_cv, sg.cos_current, sg.cos_mean_others, m.alpha(m.sink)};
    if (std::isfinite(row[0]) && std::isfinite(row[1]) && std::isfinite(row[2])) {
      for (int c = 0; c < 5; ++c) head_sink[h * 5 + c] += row[c];
      head_sink_n[h]++;
    }
  }
}

void UnitAccumulator::add_role(int layer, int head, int query, bool final, Role role, bool prev) {
  const std::size_t G = layout.group_count();
  const std::size_t base = (static_cast<std::size_t>(layer) * layout.heads + head) * G;
  previous[static_cast<std::size_t>(layer) * layout.heads + head] += prev;
  auto bump = [&](int g) { roles[(base + g) * kRoles + static_cast<int>(role)]++; };
  bump(layout.all_group());
  if (final) bump(layout.final_group());
  if (const int b = layout.group_of_bin(query); b > 0) bump(b);
}

Aggregate::Aggregate(const Layout& l, const Settings& s) : layout_(l), settings_(s) {
  const std::size_t S = l.slots.size(), K = l.nk(), LH = static_cast<std::size_t>(l.layers) * l.heads;
  slot_sum_.assign(S * K * kDistances * 2 * kMetrics, 0.0);
  slot_count_.assign(S * K * kDistances * 2, 0);
  roles_.assign(LH * l.group_count() * kRoles, 0);
  previous_.assign(LH, 0);
  head_sink_.assign(LH * 5, 0.0);
  head_sink_n_.assign(LH, 0);
}

int Aggregate::group_cell(int g, int k, int dist, int sel) const {
  return ((g * layout_.nk() + k) * kDistances + dist) * kSels + sel;
}

void Aggregate::add(const UnitAccumulator& u) {
  for (std::size_t i = 0; i < slot_sum_.size(); ++i) slot_sum_[i] += u.slot_sum[i];
  for (std::size_t i = 0; i < slot_count_.size(); ++i) slot_count_[i] += u.slot_count[i];
  for (std::size_t i = 0; i < roles_.size(); ++i) roles_[i] += u.roles[i];
  for (std::size_t i = 0; i < previous_.size(); ++i) previous_[i] += u.previous[i];
  for (std::size_t i = 0; i < head_sink_.size(); ++i) head_sink_[i] += u.head_sink[i];
  for (std::size_t i = 0; i < head_sink_n_.size(); ++i) head_sink_n_[i] += u.head_sink_n[i];
  // The document's own means (heads, layers and queries of a group averaged within the document).
  std::vector<double> means(u.group_count.size() * kMetrics, NAN);
  for (std::size_t c = 0; c < u.group_count.size(); ++c)
    if (u.group_count[c] > 0)
      for (int m = 0; m < kMetrics; ++m) means[c * kMetrics + m] = u.group_sum[c * kMetrics + m] / u.group_count[c];
  unit_group_.push_back(std::move(means));
  std::vector<double> st(u.sink_top.size(), NAN);
  for (std::size_t c = 0; c < st.size(); ++c)
    if (u.sink_top_n[c] > 0) st[c] = u.sink_top[c] / u.sink_top_n[c];
  unit_sink_top_.push_back(std::move(st));
  resampled_ = false;
}

void Aggregate::draw_resamples() const {
  resamples_.clear();
  rng::Engine e = rng::engine(settings_.seed, 0, kBootstrapStream);
  const int U = units();
  if (U == 0) return;
  boost::random::uniform_int_distribution<int> pick(0, U - 1);
  for (int b = 0; b < settings_.bootstrap; ++b) {
    std::vector<int> draw(U);
    for (int& x : draw) x = pick(e);
    resamples_.push_back(std::move(draw));
  }
}

Aggregate::Estimate Aggregate::estimate(const std::vector<double>& v) const {
  if (!resampled_) {
    draw_resamples();
    resampled_ = true;
  }
  Estimate est;
  double sum = 0;
  for (double x : v)
    if (std::isfinite(x)) {
      sum += x;
      est.units++;
    }
  if (est.units == 0) return est;
  est.mean = sum / est.units;
  if (est.units < 2 || resamples_.empty()) return est;
  std::vector<double> boots;
  boots.reserve(resamples_.size());
  for (const auto& draw : resamples_) {
    double s = 0;
    int n = 0;
    for (int i : draw)
      if (std::isfinite(v[i])) {
        s += v[i];
        ++n;
      }
    if (n > 0) boots.push_back(s / n);
  }
  std::sort(boots.begin(), boots.end());
  const double a = (1.0 - settings_.confidence) / 2.0;
  auto quantile = [&](double q) {
    const double pos = q * (boots.size() - 1);
    const std::size_t i = static_cast<std::size_t>(std::floor(pos));
    const double f = pos - i;
    return i + 1 < boots.size() ? boots[i] * (1 - f) + boots[i + 1] * f : boots[i];
  };
  est.lo = quantile(a);
  est.hi = quantile(1 - a);
  return est;
}

std::vector<double> Aggregate::per_unit(int g, int k, int dist, int sel, int metric) const {
  std::vector<double> v;
  const int c = group_cell(g, k, dist, sel);
  for (const auto& u : unit_group_) v.push_back(u[static_cast<std::size_t>(c) * kMetrics + metric]);
  return v;
}

std::vector<double> Aggregate::per_unit_advantage(int g, int k, int dist, int metric) const {
  std::vector<double> a = per_unit(g, k, dist, top, metric), b = per_unit(g, k, dist, random, metric);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] -= b[i];  // NaN when either is missing
  return a;
}

std::vector<double> Aggregate::per_unit_sink_top(int g, int k) const {
  std::vector<double> v;
  for (const auto& u : unit_sink_top_) v.push_back(u[static_cast<std::size_t>(g) * layout_.nk() + k]);
  return v;
}

Table Aggregate::geometry_table() const {
  Table t({"layer", "head", "query", "N", "distance", "selection", "precision", "recall", "F", "margin", "ginv"});
  const int K = layout_.nk();
  for (std::size_t s = 0; s < layout_.slots.size(); ++s) {
    const auto& [layer, head, query] = layout_.slots[s];
    for (int k = 0; k < K; ++k)
      for (int d = 0; d < kDistances; ++d)
        for (int sel : {top, random}) {
          const std::size_t c = ((s * K + k) * kDistances + d) * 2 + sel;
          if (slot_count_[c] == 0) continue;
          std::vector<Cell> row = {double(layer), double(head), double(query), double(layout_.n_values[k]),
                                   to_string(static_cast<Distance>(d)), std::string(sel == top ? "top" : "random")};
          for (int m = 0; m < kMetrics; ++m) row.push_back(slot_sum_[c * kMetrics + m] / slot_count_[c]);
          t.add_row(std::move(row));
        }
  }
  return t;
}

Table Aggregate::summary_table() const {
  Table t({"queries", "N", "distance", "selection", "precision", "recall", "F", "F_lo", "F_hi", "margin", "ginv", "units"});
  for (int g = 0; g < layout_.group_count(); ++g)
    for (int k = 0; k < layout_.nk(); ++k)
      for (int d = 0; d < kDistances; ++d)
        for (int sel : {0, 1, 2}) {  // top, random, top − random
          std::array<Estimate, kMetrics> e;
          for (int m = 0; m < kMetrics; ++m)
            e[m] = sel == 2 ? estimate(per_unit_advantage(g, k, d, m)) : estimate(per_unit(g, k, d, sel, m));
          if (e[kF].units == 0) continue;
          t.add_row({layout_.groups[g], double(layout_.n_values[k]), to_string(static_cast<Distance>(d)),
                     std::string(sel == 0 ? "top" : sel == 1 ? "random" : "top_minus_random"), e[0].mean, e[1].mean,
                     e[kF].mean, e[kF].lo, e[kF].hi, e[3].mean, e[4].mean, double(e[kF].units)});
        }
  return t;
}

Table Aggregate::sink_effect_table() const {
  Table t({"queries", "N", "distance", "F_with_sink", "F_with_sink_lo", "F_with_sink_hi", "F_without_sink",
           "F_without_sink_lo", "F_without_sink_hi", "precision_with_sink", "recall_with_sink", "precision_without_sink",
           "recall_without_sink", "sink_in_top", "units"});
  for (int g = 0; g < layout_.group_count(); ++g)
    for (int k = 0; k < layout_.nk(); ++k)
      for (int d = 0; d < kDistances; ++d) {
        const Estimate with = estimate(per_unit(g, k, d, top, kF));
        const Estimate without = estimate(per_unit(g, k, d, top_nosink, kF));
        if (with.units == 0 || without.units == 0) continue;
        const Estimate in_top = estimate(per_unit_sink_top(g, k));
        t.add_row({layout_.groups[g], double(layout_.n_values[k]), to_string(static_cast<Distance>(d)), with.mean, with.lo,
                   with.hi, without.mean, without.lo, without.hi, estimate(per_unit(g, k, d, top, 0)).mean,
                   estimate(per_unit(g, k, d, top, 1)).mean, estimate(per_unit(g, k, d, top_nosink, 0)).mean,
                   estimate(per_unit(g, k, d, top_nosink, 1)).mean, in_top.mean, double(with.units)});
      }
  return t;
}

std::vector<HeadLabel> Aggregate::labels() const {
  std::vector<HeadLabel> out;
  const int G = layout_.group_count();
  for (int l = 0; l < layout_.layers; ++l)
    for (int h = 0; h < layout_.heads; ++h) {
      std::array<long, kRoles> c{};
      const std::size_t base = ((static_cast<std::size_t>(l) * layout_.heads + h) * G + layout_.all_group()) * kRoles;
      for (int r = 0; r < kRoles; ++r) c[r] = roles_[base + r];
      out.push_back(c[0] + c[1] + c[2] > 0 ? aggregate_roles(c, settings_.taxonomy) : HeadLabel{});
    }
  return out;
}

Table Aggregate::heads_table() const {
  Table t({"layer", "head", "sink_norm_ratio", "norm_cv", "label", "retriever_share", "mixer_share", "reset_share",
           "cos_sink_current", "cos_sink_others", "sink_attention_final", "previous_share", "taxonomy_queries"});
  const std::vector<HeadLabel> lab = labels();
  for (int l = 0; l < layout_.layers; ++l)
    for (int h = 0; h < layout_.heads; ++h) {
      const std::size_t i = static_cast<std::size_t>(l) * layout_.heads + h;
      const HeadLabel& hl = lab[i];
      const long n = head_sink_n_[i];
      if (n == 0 && hl.queries == 0) continue;
      auto mean = [&](int c) { return n > 0 ? head_sink_[i * 5 + c] / n : NAN; };
      t.add_row({double(l), double(h), mean(0), mean(1), hl.queries > 0 ? to_string(hl.label) : std::string(""),
                 hl.queries > 0 ? hl.share[0] : NAN, hl.queries > 0 ? hl.share[1] : NAN, hl.queries > 0 ? hl.share[2] : NAN,
                 mean(2), mean(3), mean(4), hl.queries > 0 ? double(previous_[i]) / hl.queries : NAN, double(hl.queries)});
    }
  return t;
}

Table Aggregate::taxonomy_table() const {
  Table t({"queries", "layer", "retriever", "mixer", "reset", "retriever_share", "mixer_share", "reset_share"});
  const int G = layout_.group_count();
  for (int g = 0; g < G; ++g) {
    bool any = false;
    std::vector<std::array<double, kRoles>> per_layer(layout_.layers, {0, 0, 0});
    std::vector<std::array<double, kRoles>> share(layout_.layers, {0, 0, 0});
    for (int l = 0; l < layout_.layers; ++l)
      for (int h = 0; h < layout_.heads; ++h) {
        std::array<long, kRoles> c{};
        const std::size_t base = ((static_cast<std::size_t>(l) * layout_.heads + h) * G + g) * kRoles;
        for (int r = 0; r < kRoles; ++r) c[r] = roles_[base + r];
        if (c[0] + c[1] + c[2] == 0) continue;
        any = true;
        const HeadLabel hl = aggregate_roles(c, settings_.taxonomy);
        per_layer[l][static_cast<int>(hl.label)] += 1;
        for (int r = 0; r < kRoles; ++r) share[l][r] += hl.share[r];
      }
    if (!any) continue;
    for (int l = 0; l < layout_.layers; ++l) {
      const double heads = per_layer[l][0] + per_layer[l][1] + per_layer[l][2];
      if (heads == 0) continue;
      t.add_row({layout_.groups[g], double(l), per_layer[l][0], per_layer[l][1], per_layer[l][2], share[l][0] / heads,
                 share[l][1] / heads, share[l][2] / heads});
    }
  }
  return t;
}

nlohmann::json Aggregate::headline() const {
  nlohmann::json j = nlohmann::json::object();
  // F at N = 2, 4, 8 (the small-N regime where the paper expects the gap), per group and distance.
  for (int g = 0; g < layout_.group_count(); ++g)
    for (int k = 1; k < std::min(layout_.nk(), 4); ++k)
      for (int d = 0; d < kDistances; ++d) {
        const Estimate a = estimate(per_unit(g, k, d, top, kF)), b = estimate(per_unit(g, k, d, random, kF));
        if (a.units == 0) continue;
        j[layout_.groups[g]][to_string(static_cast<Distance>(d))][fmt::format("N{}", layout_.n_values[k])] = {
            {"F_top", a.mean}, {"F_random", b.mean}};
      }
  return j;
}

}  // namespace hdat::geometry::detail
