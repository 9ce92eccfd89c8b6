#include "hdat/geometry/sink.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "hdat/core/error.hpp"

namespace hdat::geometry {

std::string to_string(Role r) {
  switch (r) {
    case Role::retriever: return "retriever";
    case Role::mixer: return "mixer";
    case Role::reset: return "reset";
  }
  return "?";
}

namespace {
double stabilised_cos(const Eigen::Ref<const Eigen::VectorXd>& a, const Eigen::Ref<const Eigen::VectorXd>& b) {
  return a.dot(b) / (a.norm() * b.norm() + kCosineEpsilon);
}
}  // namespace

SinkGeometry sink_geometry(const Eigen::Ref<const Eigen::MatrixXd>& values, int sink, int current) {
  const int n = static_cast<int>(values.cols());
  if (sink < 0 || sink >= n) throw InputError("sink", fmt::format("index {} is not a visible source (0..{})", sink, n - 1));
  if (n < 2) throw InputError("values", "sink geometry needs the sink and at least one other source");
  if (current < 0 || current >= n) throw InputError("query", fmt::format("{} is not a visible source (0..{})", current, n - 1));
  std::vector<double> norms;
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(values.rows());
  for (int i = 0; i < n; ++i) {
    if (i == sink) continue;
    norms.push_back(values.col(i).norm());
    mean += values.col(i);
  }
  const double m = static_cast<double>(norms.size());
  mean /= m;
  SinkGeometry g;
  g.sink_norm = values.col(sink).norm();
  std::vector<double> sorted = norms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t h = sorted.size() / 2;
  g.median_norm = sorted.size() % 2 ? sorted[h] : 0.5 * (sorted[h - 1] + sorted[h]);
  g.norm_ratio = g.sink_norm / g.median_norm;
  double mu = 0, var = 0;
  for (double x : norms) mu += x;
  mu /= m;
  for (double x : norms) var += (x - mu) * (x - mu);
  var /= m;
  g.norm_cv = std::sqrt(var) / mu;
  g.cos_current = current == sink ? NAN : stabilised_cos(values.col(sink), values.col(current));
  g.cos_mean_others = stabilised_cos(values.col(sink), mean);
  return g;
}

Winner winning_source(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values, Tie tie) {
  check_head_query(alpha, values);
  Winner w;
  w.score = -INFINITY;
  w.runner_up = -INFINITY;
  for (Eigen::Index j = 0; j < alpha.size(); ++j) {
    const double score = alpha(j) * values.col(j).norm();
    const bool wins = tie == Tie::earlier ? score > w.score : score >= w.score;
    if (wins) {
      w.runner_up = w.score;
      w.score = score;
      w.source = static_cast<int>(j);
    } else if (score > w.runner_up) {
      w.runner_up = score;
    }
  }
  if (alpha.size() == 1) w.runner_up = 0;
  return w;
}

Role classify_query(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values,
                    const TaxonomyOptions& options, int* winner) {
  const int t = static_cast<int>(alpha.size()) - 1;
  if (t == options.sink)
    throw InputError("query", fmt::format("query {} is the sink itself: Retriever and Mixer cannot be told apart", t));
  if (options.winner_margin < 0) throw InputError("taxonomy.winner_margin", "must be >= 0");
  const Winner w = winning_source(alpha, values, options.tie);
  if (winner) *winner = w.source;
  if (options.winner_margin > 0 && !(w.score >= (1.0 + options.winner_margin) * w.runner_up)) return Role::reset;
  if (w.source == t) return Role::retriever;
  if (w.source == options.sink) return Role::mixer;
  return Role::reset;
}

HeadLabel aggregate_roles(const std::array<long, kRoles>& counts, const TaxonomyOptions& options) {
  HeadLabel h;
  for (long c : counts) h.queries += c;
  if (h.queries == 0) throw InputError("queries", "a head label needs at least one evaluated query");
  for (int r = 0; r < kRoles; ++r) h.share[r] = static_cast<double>(counts[r]) / h.queries;
  // Plurality; ties go to the less specific label (Reset, then Mixer, then Retriever).
  int best = static_cast<int>(Role::reset);
  for (int r : {static_cast<int>(Role::mixer), static_cast<int>(Role::retriever)})
    if (counts[r] > counts[best]) best = r;
  h.label = static_cast<Role>(best);
  if (h.share[best] < options.min_share) h.label = Role::reset;
  return h;
}

}  // namespace hdat::geometry
