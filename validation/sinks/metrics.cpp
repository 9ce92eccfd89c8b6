#include "hdat/sinks/metrics.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace hdat::sinks {

double sink_score(const ConstMapRef& A, int first_row, int last_row, int sink) {
  if (first_row < 0 || last_row >= A.rows() || first_row > last_row || sink < 0 || sink >= A.cols())
    throw std::invalid_argument("sink_score: rows or sink out of range");
  double on_sink = 0, total = 0;
  for (int i = first_row; i <= last_row; ++i) {
    on_sink += A(i, sink);
    total += A.row(i).sum();
  }
  return total != 0 ? on_sink / total : 0.0;  // signed weights (raw_dotproduct): any sign, as the authors' ratio
}

double sparsity_score(const ConstMapRef& A, const std::vector<int>& rows) {
  double sum = 0;
  int counted = 0;
  for (int i : rows) {
    const double total = A.row(i).sum();
    if (!(total > 0)) continue;
    sum += A.row(i).maxCoeff() / total;
    ++counted;
  }
  return counted ? sum / counted : std::numeric_limits<double>::quiet_NaN();
}

double share_above(const std::vector<double>& scores, double threshold) {
  if (scores.empty()) return std::numeric_limits<double>::quiet_NaN();
  int n = 0;
  for (double s : scores) n += s > threshold;
  return double(n) / double(scores.size());
}

int top_key(const ConstMapRef& A, int row, const std::vector<int>& keys) {
  if (keys.empty()) throw std::invalid_argument("top_key: no keys");
  int best = keys.front();
  for (int j : keys)
    if (A(row, j) > A(row, best)) best = j;
  return best;
}

}  // namespace hdat::sinks
