#pragma once
// A flat state vector with named order-parameter blocks (e.g. M: H x F, R: H x H symmetric).
// Integrators see one Eigen::VectorXd; the equations see matrices through Eigen::Map views, so the
// right-hand side reads like the formula. Blocks are stored column-major and in full (a symmetric
// block keeps both triangles; the equations keep it symmetric, output lists i <= j only).
#include <Eigen/Dense>
#include <string>
#include <vector>

namespace hdat {

struct Block {
  std::string name;
  int rows = 0, cols = 0;
  bool symmetric = false;
  int offset = 0;
  bool vector = false;  ///< a column vector named by one index (NAME_i) in output
  int size() const { return rows * cols; }
};

class StateLayout {
 public:
  StateLayout& add(const std::string& name, int rows, int cols, bool symmetric = false);
  /// A vector block of n components, columns NAME_i.
  StateLayout& add_vector(const std::string& name, int n);
  int size() const { return size_; }
  const std::vector<Block>& blocks() const { return blocks_; }
  const Block& block(const std::string& name) const;
  bool contains(const std::string& name) const;

  Eigen::Map<Eigen::MatrixXd> view(Eigen::VectorXd& x, const std::string& name) const;
  Eigen::Map<const Eigen::MatrixXd> view(const Eigen::VectorXd& x, const std::string& name) const;
  Eigen::Map<Eigen::MatrixXd> view(double* x, const std::string& name) const;
  Eigen::Map<const Eigen::MatrixXd> view(const double* x, const std::string& name) const;

  /// Output column names, "BLOCK_i_j" with 0-based indices, row-major, i <= j for symmetric blocks.
  std::vector<std::string> columns(const std::string& suffix = "") const;
  /// The flat index of each output column, in the order of columns().
  std::vector<int> listed() const;
  /// The values in the order of columns().
  std::vector<double> values(const Eigen::VectorXd& x) const;
  /// The state with these values in the order of columns() (symmetric blocks filled on both sides).
  Eigen::VectorXd from_values(const std::vector<double>& values) const;
  /// Name of the flat component k, e.g. "R_0_1" (for messages about non-finite states).
  std::string component_name(int k) const;

 private:
  std::vector<Block> blocks_;
  int size_ = 0;
};

}  // namespace hdat
