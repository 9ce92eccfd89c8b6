#pragma once
// Internal machinery of the geometry analysis, shared by the checkpoint and the maps paths:
// settings, the layout of what is measured (slots = (layer, head, query), query groups), the
// per-document accumulator and the aggregate over documents (means, bootstrap intervals, tables).
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hdat/core/params.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"
#include "hdat/geometry/metrics.hpp"
#include "hdat/geometry/sink.hpp"

namespace hdat::geometry::detail {

inline constexpr int kMetrics = 5;  // precision, recall, F, margin, ginv
inline constexpr int kF = 2;        // index of F among the metrics
enum Sel { top = 0, random = 1, top_nosink = 2 };
inline constexpr int kSels = 3;

// Random streams (rng::engine(seed, replica, stream)): replica = document; random sets use
// kRandomSets + slot so that every (document, layer, head, query) has its own stream.
enum Stream : std::uint64_t {
  kSampleStream = rng::user + 10,
  kHeldOutStream = rng::user + 11,
  kBootstrapStream = rng::user + 12,
  kRandomOrderStream = rng::user + 13,
  kRandomSets = rng::user + 1000,
};

struct Settings {
  CurveOptions curve;  // exclude = -1: the sink is a candidate (default analysis)
  TaxonomyOptions taxonomy;
  int sink = 0;
  int bootstrap = 1000;
  double confidence = 0.95;
  std::uint64_t seed = 1;
  std::vector<int> bin_edges;
  int threads = 1;
  bool quiet = false;
  static Settings from(const Params& p, const RunContext& ctx);
};

/// What is measured: the per-map slots and the query groups "final", the bins, "all".
struct Layout {
  int layers = 0, heads = 0, max_query = 0;
  std::vector<int> n_values;                 // 1, 2, 4, ..., n_max
  std::vector<std::array<int, 3>> slots;     // (layer, head, query), sorted
  std::map<std::array<int, 3>, int> index;   // slot -> position
  std::vector<int> bin_edges;
  std::vector<std::string> groups;           // "final", "a-b" per bin, "all"

  void set_n_values(int n_max);
  void add_slot(int layer, int head, int query);
  void finish(const std::vector<int>& edges);  // sorts slots, names the groups
  int slot(int layer, int head, int query) const;
  int group_count() const { return static_cast<int>(groups.size()); }
  int final_group() const { return 0; }
  int all_group() const { return group_count() - 1; }
  int group_of_bin(int query) const;  // 1 + bin, or -1 when below the first edge
  int nk() const { return static_cast<int>(n_values.size()); }
};

/// One map of one document, as views.
struct MapInput {
  int layer, head, query, sink;
  Eigen::Ref<const Eigen::VectorXd> alpha;
  Eigen::Ref<const Eigen::MatrixXd> values;
  bool final;             // the document's last query for this head
  std::uint64_t stream;   // random-set stream within the document
};

/// Sums over the maps of one document.
class UnitAccumulator {
 public:
  UnitAccumulator(const Layout& layout, const Settings& settings);
  /// Top-N and random metrics (sink kept), top-N with the sink excluded, sink rank, and (at the
  /// final query) sink geometry. `unit` = the document index (the random sets' replica).
  void add_map(const MapInput& m, std::uint64_t unit);
  /// One query's taxonomy role; `previous`: its winner is the token just before the query (a
  /// finer look at the Resets of models whose heads read the previous token).
  void add_role(int layer, int head, int query, bool final, Role role, bool previous);

  const Layout& layout;
  const Settings& settings;
  std::vector<double> slot_sum;   // [slot][k][dist][top|random][metric]
  std::vector<int> slot_count;    // [slot][k][dist][top|random]
  std::vector<double> group_sum;  // [g][k][dist][sel][metric]
  std::vector<long> group_count;  // [g][k][dist][sel]
  std::vector<double> sink_top;   // [g][k]: maps whose top-N set holds the sink
  std::vector<long> sink_top_n;   // [g][k]
  std::vector<long> roles;        // [layer][head][g][role]
  std::vector<long> previous;     // [layer][head]: winners at t − 1 (all queries)
  std::vector<double> head_sink;  // [layer][head][5]: norm ratio, cv, cos current, cos others, α_sink (final query)
  std::vector<long> head_sink_n;  // [layer][head]

 private:
  SelectionGeometry geo_;
  QueryCurves curves_, nosink_;
};

/// Across documents, in document order (results independent of the thread count).
class Aggregate {
 public:
  Aggregate(const Layout& layout, const Settings& settings);
  void add(const UnitAccumulator& u);
  int units() const { return static_cast<int>(unit_group_.size()); }

  Table geometry_table() const;     // geometry.csv (the spec's contract)
  Table summary_table() const;      // summary.csv: per group, N, distance: top, random, top − random with bootstrap CI
  Table sink_effect_table() const;  // sink_effect.csv: F with and without the sink
  Table heads_table() const;        // heads.csv (the spec's contract + extra columns)
  Table taxonomy_table() const;     // taxonomy.csv: labelled heads per group and layer
  /// Head labels over all classified queries (layer-major; label = reset with queries = 0 if none).
  std::vector<HeadLabel> labels() const;
  nlohmann::json headline() const;  // a few key numbers for run.json / the summary line

 private:
  struct Estimate {
    double mean = NAN, lo = NAN, hi = NAN;
    int units = 0;
  };
  // Mean over units with data and a percentile bootstrap interval over units.
  Estimate estimate(const std::vector<double>& per_unit) const;
  std::vector<double> per_unit(int g, int k, int dist, int sel, int metric) const;
  std::vector<double> per_unit_advantage(int g, int k, int dist, int metric) const;
  std::vector<double> per_unit_sink_top(int g, int k) const;
  int group_cell(int g, int k, int dist, int sel) const;

  const Layout& layout_;
  const Settings& settings_;
  std::vector<double> slot_sum_;
  std::vector<long> slot_count_;
  std::vector<std::vector<double>> unit_group_;     // per unit: [cell][metric] means (NaN: no data)
  std::vector<std::vector<double>> unit_sink_top_;  // per unit: [g][k]
  std::vector<long> roles_, previous_;
  std::vector<double> head_sink_;
  std::vector<long> head_sink_n_;
  mutable std::vector<std::vector<int>> resamples_;  // bootstrap draws of unit indices, drawn once
  mutable bool resampled_ = false;
  void draw_resamples() const;
};

}  // namespace hdat::geometry::detail
