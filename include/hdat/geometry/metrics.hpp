#pragma once
// Token-selection geometry of one attention head at one query (spec: ../shared/spec/geometry.md).
//
// Setting: sources i = 0..t visible to the query t, attention weights α_i, value vectors v_i
// (column i of `values`, any width d). Contributions y_i = α_i v_i. For a selected set S of size N,
// the aggregate s_N = Σ_{i∈S} y_i (not renormalised) and the distances D_i = d(y_i, s_N) give
//   ρ_max = max_{i∈S} D_i,  ρ_min = min_{j∉S} D_j,
//   P_N = N / (N + #{j∉S : D_j ≤ ρ_max}),  R_N = #{i∈S : D_i < ρ_min} / N,  F_N = 2PR/(P+R) (0 if R = 0),
//   γ_N = ρ_min − ρ_max,  GInv_N = Σ_{i∈S} Σ_{j∉S} 1{D_j ≤ D_i}.
// The top-N set holds the N largest α (or |y_i|), ties to the earlier index; the random baseline
// takes nested random sets, each measured around ITS OWN aggregate.
#include <Eigen/Dense>
#include <array>
#include <span>
#include <string>
#include <vector>

#include "hdat/core/random.hpp"

namespace hdat::geometry {

enum class Distance { euclidean = 0, cosine = 1 };
enum class Ranking { attention, contribution };  ///< top-N by α_i, or by |y_i| = α_i |v_i|
enum class Tie { earlier, later };               ///< which index wins among equal keys

inline constexpr int kDistances = 2;
std::string to_string(Distance d);
std::string to_string(Ranking r);
std::string to_string(Tie t);
Distance parse_distance(const std::string& s, const std::string& key);
Ranking parse_ranking(const std::string& s, const std::string& key);
Tie parse_tie(const std::string& s, const std::string& key);

/// The stabilised cosine distance 1 − <x,y>/(|x||y| + 1e-12): zero vectors sit at distance 1.
inline constexpr double kCosineEpsilon = 1e-12;

/// The metrics of one set of size N.
struct SetMetrics {
  int N = 0;
  double precision = 0, recall = 0, F = 0, margin = 0, ginv = 0;
};

/// Harmonic mean with F = 0 when R = 0 (also when P = 0).
double f_score(double precision, double recall);

/// The metrics from the distances D (one per candidate) and the membership flags (1: in S).
/// Needs at least one member and one non-member. `scratch` is reused to avoid allocation.
SetMetrics metrics_from_distances(std::span<const double> D, std::span<const char> in_set,
                                  std::vector<double>& scratch);

/// Reference implementation straight from the definitions (O(n² d)), for tests: the set `selected`
/// (indices of columns of y) among the `candidates`, around its own aggregate.
SetMetrics set_metrics_reference(const Eigen::Ref<const Eigen::MatrixXd>& y, std::span<const int> candidates,
                                 std::span<const int> selected, Distance d);

/// Candidates sorted by decreasing key (α_i, or α_i |v_i|); equal keys keep the earlier index first
/// (Tie::earlier) or the later first (Tie::later).
std::vector<int> top_order(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values,
                           std::span<const int> candidates, Ranking ranking, Tie tie = Tie::earlier);

/// The N grid {1, 2, 4, ..., n_max} (powers of two), then capped by the context: N < n_candidates.
std::vector<int> n_grid(int n_max, int n_candidates);

/// The random baseline's nested sets: the first k entries of a uniformly random permutation of
/// 0..m−1 (partial Fisher–Yates); the set of size N is the first N entries, for every N ≤ k.
std::vector<int> random_prefix(int m, int k, rng::Engine& engine);

struct CurveOptions {
  int n_max = 256;                  ///< largest N of the power-of-two grid
  Ranking ranking = Ranking::attention;
  Tie tie = Tie::earlier;
  int exclude = -1;                 ///< a source left out of the candidates (the sink), -1 for none
  int random_repeats = 16;          ///< random nested sets per (head, query); 0: no baseline
};

/// All metrics of one head at one query over the N grid, both distances.
struct QueryCurves {
  std::vector<int> N;                                      ///< grid entries evaluated
  std::array<std::vector<SetMetrics>, kDistances> top;     ///< [distance][k]
  std::array<std::vector<SetMetrics>, kDistances> random;  ///< mean over the repeats (empty if none)
};

/// Evaluates queries efficiently: the candidates are sorted once, s_N grows incrementally over the
/// grid, and the buffers are reused from call to call (one evaluator per thread).
class SelectionGeometry {
 public:
  /// Throws InputError (key "alpha"/"values") on empty or mismatched inputs and non-finite numbers.
  void evaluate(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values,
                const CurveOptions& options, rng::Engine* engine, QueryCurves& out);

 private:
  // Metrics of the current set (in_set_, aggregate s_), both distances.
  void measure(std::array<SetMetrics, kDistances>& out);
  // Contributions of the candidates, column k = y of candidate k; row-major so that one component
  // of all sources is contiguous (the distance loops run across sources).
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> y_;
  Eigen::VectorXd s_, norms_;
  std::vector<int> candidates_, order_, position_;
  std::vector<double> D_, scratch_, sq_, dot_;
  std::vector<char> in_set_;
};

/// Validates one head-query input (shared by every entry point).
void check_head_query(const Eigen::Ref<const Eigen::VectorXd>& alpha, const Eigen::Ref<const Eigen::MatrixXd>& values);

}  // namespace hdat::geometry
