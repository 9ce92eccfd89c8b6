#include "hdat/geometry/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <numeric>

#include "hdat/core/error.hpp"

namespace hdat::geometry {

std::string to_string(Distance d) { return d == Distance::euclidean ? "euclidean" : "cosine"; }
std::string to_string(Ranking r) { return r == Ranking::attention ? "attention" : "contribution"; }
std::string to_string(Tie t) { return t == Tie::earlier ? "earlier" : "later"; }

Distance parse_distance(const std::string& s, const std::string& key) {
  if (s == "euclidean") return Distance::euclidean;
  if (s == "cosine") return Distance::cosine;
  throw InputError(key, "expected euclidean or cosine, got '" + s + "'");
}
Ranking parse_ranking(const std::string& s, const std::string& key) {
  if (s == "attention") return Ranking::attention;
  if (s == "contribution") return Ranking::contribution;
  throw InputError(key, "expected attention or contribution, got '" + s + "'");
}
Tie parse_tie(const std::string& s, const std::string& key) {
  if (s == "earlier") return Tie::earlier;
  if (s == "later") return Tie::later;
  throw InputError(key, "expected earlier or later, got '" + s + "'");
}

double f_score(double precision, double recall) {
  if (recall <= 0.0 || precision <= 0.0) return 0.0;
  return 2.0 * precision * recall / (precision + recall);
}

namespace {
// Σ_q #{k : a[k] < x_q} (strict) or Σ_q #{k : a[k] ≤ x_q} over the queries x[0..m), a[0..n) sorted.
// Branch-free binary searches (the step is multiplied by the comparison), eight at a time in lockstep: the step sequence
// depends only on n, and the eight independent searches hide each other's load latency.
template <bool strict>
double sum_counts(const double* a, std::size_t n, const double* x, std::size_t m) {
  auto below = [](double ak, double xq) { return strict ? ak < xq : ak <= xq; };
  constexpr std::size_t B = 8;
  double total = 0;
  std::size_t q = 0;
  for (; q + B <= m; q += B) {
    const double* base[B];
    for (std::size_t b = 0; b < B; ++b) base[b] = a;
    std::size_t len = n;
    while (len > 1) {
      const std::size_t half = len / 2;
      for (std::size_t b = 0; b < B; ++b) base[b] += half * static_cast<std::size_t>(below(base[b][half - 1], x[q + b]));
      len -= half;
    }
    for (std::size_t b = 0; b < B; ++b) total += static_cast<double>(base[b] - a) + (below(*base[b], x[q + b]) ? 1 : 0);
  }
  for (; q < m; ++q) {
    const double* base = a;
    std::size_t len = n;
    while (len > 1) {
      const std::size_t half = len / 2;
      base += half * static_cast<std::size_t>(below(base[half - 1], x[q]));
      len -= half;
    }
    total += static_cast<double>(base - a) + (below(*base, x[q]) ? 1 : 0);
  }
  return total;
}
}  // namespace

SetMetrics metrics_from_distances(std::span<const double> D, std::span<const char> in_set, std::vector<double>& scratch) {
  const std::size_t n = D.size();
  if (in_set.size() != n) throw InputError("in_set", fmt::format("has {} flags for {} distances", in_set.size(), n));
  // The loops below are written without data-dependent branches (selects and counted stores): the
  // membership pattern of a random set is unpredictable.
  double rho_max = -INFINITY, rho_min = INFINITY;
  long N = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool member = in_set[i] != 0;
    N += member;
    rho_max = std::max(rho_max, member ? D[i] : -INFINITY);
    rho_min = std::min(rho_min, member ? INFINITY : D[i]);
  }
  if (N == 0 || N == static_cast<long>(n))
    throw InputError("N", fmt::format("needs 1 <= N < number of candidates (got N = {} of {})", N, n));
  // Only the overlap can hold inversions: selected i with D_i ≥ ρ_min (the not-recalled ones) and
  // unselected j with D_j ≤ ρ_max (the contamination); any other pair has D_j > D_i.
  scratch.resize(2 * n);
  double* late_d = scratch.data();         // [0, late)
  double* contaminating = late_d + n;      // [0, contamination)
  std::size_t late = 0, b = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool member = in_set[i] != 0;
    late_d[late] = D[i];
    late += member & (D[i] >= rho_min);
    contaminating[b] = D[i];
    b += !member & (D[i] <= rho_max);
  }
  const long contamination = static_cast<long>(b);
  const long recalled = N - static_cast<long>(late);
  // GInv = Σ_{i∈S} #{j∉S : D_j ≤ D_i}: sort the smaller side of the overlap and count for each
  // point of the other side by binary search.
  double ginv = 0;
  if (late > 0 && b > 0) {
    if (late <= b) {
      std::sort(late_d, late_d + late);  // Σ_j #{i : D_i ≥ D_j} = Σ_j (late − #{i : D_i < D_j})
      ginv = static_cast<double>(late * b) - sum_counts<true>(late_d, late, contaminating, b);
    } else {
      std::sort(contaminating, contaminating + b);  // Σ_i #{j : D_j ≤ D_i}
      ginv = sum_counts<false>(contaminating, b, late_d, late);
    }
  }
  SetMetrics m;
  m.N = static_cast<int>(N);
  m.precision = static_cast<double>(N) / static_cast<double>(N + contamination);
  m.recall = static_cast<double>(recalled) / N;
  m.F = f_score(m.precision, m.recall);
  m.margin = rho_min - rho_max;
  m.ginv = ginv;
  return m;
}

namespace {

// Sums over the components in index order, one term at a time: the fast path (vectorised across
// sources, never across components) and the reference do the same arithmetic, so equal inputs give
// bit-equal distances and exact ties stay ties.
double squared_distance(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& s) {
  double acc = 0;
  for (Eigen::Index c = 0; c < x.size(); ++c) {
    const double diff = x(c) - s(c);
    acc += diff * diff;
  }
  return acc;
}
double dot(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& s) {
  double acc = 0;
  for (Eigen::Index c = 0; c < x.size(); ++c) acc += x(c) * s(c);
  return acc;
}
double norm(const Eigen::Ref<const Eigen::VectorXd>& x) { return std::sqrt(dot(x, x)); }

double distance(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& s, Distance d) {
  if (d == Distance::euclidean) return std::sqrt(squared_distance(x, s));
  return 1.0 - dot(x, s) / (norm(x) * norm(s) + kCosineEpsilon);
}

}  // namespace

SetMetrics set_metrics_reference(const Eigen::Ref<const Eigen::MatrixXd>& y, std::span<const int> candidates,
                                 std::span<const int> selected, Distance d) {
  Eigen::VectorXd s = Eigen::VectorXd::Zero(y.rows());
  for (int i : selected) s += y.col(i);
  std::vector<double> Dsel, Dout;
  for (int c : candidates) {
    const bool member = std::find(selected.begin(), selected.end(), c) != selected.end();
    (member ? Dsel : Dout).push_back(distance(y.col(c), s, d));
  }
  if (Dsel.empty() || Dout.empty()) throw InputError("N", "needs 1 <= N < number of candidates");
  const double rho_max = *std::max_element(Dsel.begin(), Dsel.end());
  const double rho_min = *std::min_element(Dout.begin(), Dout.end());
  long contamination = 0, recalled = 0, ginv = 0;
  for (double dj : Dout) contamination += dj <= rho_max;
  for (double di : Dsel) {
    recalled += di < rho_min;
    for (double dj : Dout) ginv += dj <= di;
  }
  SetMetrics m;
  m.N = static_cast<int>(Dsel.size());
  m.precision = double(m.N) / double(m.N + contamination);
  m.recall = double(recalled) / m.N;
  m.F = f_score(m.precision, m.recall);
  m.margin = rho_min - rho_max;
  m.ginv = static_cast<double>(ginv);
  return m;
}

void check_head_query(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values) {
  if (alpha.size() == 0) throw InputError("alpha", "is empty: a query sees at least one source");
  if (values.cols() != alpha.size())
    throw InputError("values", fmt::format("has {} vectors for {} attention weights (one per visible source)", values.cols(), alpha.size()));
  if (values.rows() == 0) throw InputError("values", "vectors have width 0");
  for (Eigen::Index i = 0; i < alpha.size(); ++i)
    if (!std::isfinite(alpha(i)) || alpha(i) < 0)
      throw InputError("alpha", fmt::format("entry {} is {}; attention weights must be finite and >= 0", i, alpha(i)));
  if (!values.allFinite()) throw InputError("values", "holds a non-finite number");
}

std::vector<int> top_order(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values,
                           std::span<const int> candidates, Ranking ranking, Tie tie) {
  std::vector<int> order(candidates.begin(), candidates.end());
  std::vector<double> key(static_cast<std::size_t>(alpha.size()));
  for (int c : order) key[c] = ranking == Ranking::attention ? alpha(c) : alpha(c) * values.col(c).norm();
  // Stable sort by decreasing key on index-ordered candidates: equal keys keep index order.
  std::sort(order.begin(), order.end());
  if (tie == Tie::earlier)
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key[a] > key[b]; });
  else
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key[a] > key[b] || (key[a] == key[b] && a > b); });
  return order;
}

std::vector<int> n_grid(int n_max, int n_candidates) {
  std::vector<int> g;
  for (long N = 1; N <= n_max && N < n_candidates; N *= 2) g.push_back(static_cast<int>(N));
  return g;
}

std::vector<int> random_prefix(int m, int k, rng::Engine& engine) {
  if (k < 0 || k > m) throw InputError("N", fmt::format("a random subset of size {} of {} sources", k, m));
  std::vector<int> perm(static_cast<std::size_t>(m));
  std::iota(perm.begin(), perm.end(), 0);
  for (int r = 0; r < k; ++r) {
    boost::random::uniform_int_distribution<int> pick(r, m - 1);
    std::swap(perm[r], perm[pick(engine)]);
  }
  perm.resize(static_cast<std::size_t>(k));
  return perm;
}

void SelectionGeometry::measure(std::array<SetMetrics, kDistances>& out) {
  const int m = static_cast<int>(candidates_.size());
  const double s_norm = norm(s_);
  // Component by component over all sources at once (rows of y_ are contiguous): the same
  // arithmetic per source as the reference.
  sq_.assign(m, 0.0);
  dot_.assign(m, 0.0);
  for (Eigen::Index c = 0; c < y_.rows(); ++c) {
    const double* row = y_.row(c).data();
    const double sc = s_(c);
    double* sq = sq_.data();
    double* dt = dot_.data();
    for (int k = 0; k < m; ++k) {
      const double diff = row[k] - sc;
      sq[k] += diff * diff;
      dt[k] += row[k] * sc;
    }
  }
  for (int d = 0; d < kDistances; ++d) {
    if (d == static_cast<int>(Distance::euclidean)) {
      for (int k = 0; k < m; ++k) D_[k] = std::sqrt(sq_[k]);
    } else {
      for (int k = 0; k < m; ++k) D_[k] = 1.0 - dot_[k] / (norms_(k) * s_norm + kCosineEpsilon);
    }
    out[d] = metrics_from_distances(D_, in_set_, scratch_);
  }
}

void SelectionGeometry::evaluate(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values,
                                 const CurveOptions& options, rng::Engine* engine, QueryCurves& out) {
  check_head_query(alpha, values);
  if (options.n_max < 1) throw InputError("n_max", fmt::format("must be >= 1 (got {})", options.n_max));
  if (options.random_repeats < 0) throw InputError("random_repeats", "must be >= 0");
  const int n = static_cast<int>(alpha.size());
  candidates_.clear();
  for (int i = 0; i < n; ++i)
    if (i != options.exclude) candidates_.push_back(i);
  const int m = static_cast<int>(candidates_.size());
  out.N = n_grid(options.n_max, m);
  for (int d = 0; d < kDistances; ++d) {
    out.top[d].assign(out.N.size(), SetMetrics{});
    out.random[d].clear();
  }
  if (out.N.empty()) return;

  y_.resize(values.rows(), m);
  norms_.resize(m);
  for (int k = 0; k < m; ++k) {
    y_.col(k) = alpha(candidates_[k]) * values.col(candidates_[k]);
    norms_(k) = norm(y_.col(k));
  }
  D_.resize(m);
  in_set_.assign(m, 0);
  s_.setZero(values.rows());

  // Top-N: one sort, then s_N grows over the grid.
  const std::vector<int> sorted = top_order(alpha, values, candidates_, options.ranking, options.tie);
  position_.assign(n, -1);
  for (int k = 0; k < m; ++k) position_[candidates_[k]] = k;
  order_.resize(m);
  for (int r = 0; r < m; ++r) order_[r] = position_[sorted[r]];
  std::array<SetMetrics, kDistances> one;
  int grown = 0;
  for (std::size_t g = 0; g < out.N.size(); ++g) {
    for (; grown < out.N[g]; ++grown) {
      s_ += y_.col(order_[grown]);
      in_set_[order_[grown]] = 1;
    }
    measure(one);
    for (int d = 0; d < kDistances; ++d) out.top[d][g] = one[d];
  }

  // Random baseline: nested sets = prefixes of one random permutation per repeat (partial
  // Fisher-Yates up to the largest N), each measured around its own aggregate.
  if (options.random_repeats == 0 || engine == nullptr) return;
  for (int d = 0; d < kDistances; ++d) out.random[d].assign(out.N.size(), SetMetrics{});
  const int n_last = out.N.back();
  for (int rep = 0; rep < options.random_repeats; ++rep) {
    order_ = random_prefix(m, n_last, *engine);
    std::fill(in_set_.begin(), in_set_.end(), 0);
    s_.setZero();
    grown = 0;
    for (std::size_t g = 0; g < out.N.size(); ++g) {
      for (; grown < out.N[g]; ++grown) {
        s_ += y_.col(order_[grown]);
        in_set_[order_[grown]] = 1;
      }
      measure(one);
      for (int d = 0; d < kDistances; ++d) {
        SetMetrics& acc = out.random[d][g];
        acc.N = out.N[g];
        acc.precision += one[d].precision;
        acc.recall += one[d].recall;
        acc.F += one[d].F;
        acc.margin += one[d].margin;
        acc.ginv += one[d].ginv;
      }
    }
  }
  const double inv = 1.0 / options.random_repeats;
  for (int d = 0; d < kDistances; ++d)
    for (auto& acc : out.random[d]) {
      acc.precision *= inv;
      acc.recall *= inv;
      acc.F *= inv;
      acc.margin *= inv;
      acc.ginv *= inv;
    }
}

}  // namespace hdat::geometry
