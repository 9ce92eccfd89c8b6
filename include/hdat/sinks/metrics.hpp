#pragma once
// Metrics of attention maps (spec/polarization.md, "Transformer experiments"). They take one head's
// L × L weights on one sequence (row = query, column = key), so that tests can hand-build maps.
#include <Eigen/Dense>
#include <vector>

#include "hdat/sinks/transformer.hpp"

namespace hdat::sinks {

using ConstMapRef = Eigen::Ref<const RowMat>;

/// Sink score of a head on one sequence: the attention mass on the sink key over the query rows
/// first .. last (inclusive), divided by the total mass of those rows. For the induction task the
/// rows are 1 .. L−3 and the sink is BOS (key 0). With unnormalised weights the ratio still says
/// which share of the head's attention goes to the sink. A zero total gives 0. With signed weights
/// (raw_dotproduct kinds) the ratio can leave [0, 1], as the authors' metric does.
double sink_score(const ConstMapRef& A, int first_row, int last_row, int sink = 0);

/// The largest share of a row: max_j α_ij / Σ_j α_ij (= the largest weight for normalised kinds),
/// averaged over the given query rows; rows whose weights are all zero are skipped (NaN if none).
double sparsity_score(const ConstMapRef& A, const std::vector<int>& rows);

/// Share of scores above the threshold (the sink heads); NaN for an empty list.
double share_above(const std::vector<double>& scores, double threshold);

/// Index of the largest weight in row `row` among keys `keys` (ties to the earlier key).
int top_key(const ConstMapRef& A, int row, const std::vector<int>& keys);

}  // namespace hdat::sinks
