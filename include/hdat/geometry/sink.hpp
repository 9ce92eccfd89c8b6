#pragma once
// Sink geometry and the Retriever / Mixer / Reset head taxonomy (spec: geometry.md, "Sink geometry
// and head taxonomy"). The paper's exact taxonomy rule is not confirmed, so every choice is an
// explicit parameter: the sink index, the tie rule, a winner margin and the aggregation over queries.
#include <Eigen/Dense>
#include <array>
#include <string>

#include "hdat/geometry/metrics.hpp"

namespace hdat::geometry {

/// Geometry of the sink's value vector against the other visible sources' values.
struct SinkGeometry {
  double sink_norm = 0;          ///< |v_sink|
  double median_norm = 0;        ///< median_{i≠sink} |v_i|
  double norm_ratio = 0;         ///< |v_sink| / median_{i≠sink} |v_i|
  double norm_cv = 0;            ///< coefficient of variation (population sd / mean) of |v_i|, i ≠ sink
  double cos_current = 0;        ///< cos(v_sink, v_t), t = the query (NaN when t is the sink)
  double cos_mean_others = 0;    ///< cos(v_sink, mean_{i≠sink} v_i)
};

/// `values`: column i = v_i for the visible sources 0..t; `current` = t. Needs a sink in range and at
/// least one other source (InputError otherwise). Cosines use the stabilised denominator.
SinkGeometry sink_geometry(const Eigen::Ref<const Eigen::MatrixXd>& values, int sink, int current);

enum class Role { retriever = 0, mixer = 1, reset = 2 };
inline constexpr int kRoles = 3;
std::string to_string(Role r);

struct TaxonomyOptions {
  int sink = 0;              ///< the sink's source index (position 0 = BOS by default)
  Tie tie = Tie::earlier;    ///< which index wins among equal scores α_j |v_j|
  /// The winner counts only if its score exceeds the runner-up's by this relative margin
  /// (score_1 ≥ (1 + margin) score_2); otherwise no source dominates and the query is a Reset.
  /// 0 (default): the plain argmax.
  double winner_margin = 0;
  /// Aggregation over queries: the head's label is the role with the largest share (ties go to
  /// Reset, then Mixer: the less specific label); if that share is below `min_share`, Reset.
  /// 0 (default): plain plurality; 0.5: a strict majority is needed.
  double min_share = 0;
};

/// The winning source argmax_j α_j |v_j| (ties by options.tie), and its score's lead.
struct Winner {
  int source = -1;
  double score = 0, runner_up = 0;
};
Winner winning_source(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values, Tie tie);

/// Role of one head at query t (= alpha.size() − 1): Retriever if the winner is t, Mixer if it is
/// the sink, Reset otherwise (or when the winner's margin is too small). Needs t ≠ sink.
/// `winner`, when given, receives the winning source (whatever the margin).
Role classify_query(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values,
                    const TaxonomyOptions& options, int* winner = nullptr);

/// A head's label from its per-query role counts.
struct HeadLabel {
  Role label = Role::reset;
  std::array<double, kRoles> share{};  ///< retriever, mixer, reset shares of the evaluated queries
  long queries = 0;
};
HeadLabel aggregate_roles(const std::array<long, kRoles>& counts, const TaxonomyOptions& options);

}  // namespace hdat::geometry
