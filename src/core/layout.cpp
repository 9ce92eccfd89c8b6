#include "hdat/core/layout.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace hdat {

StateLayout& StateLayout::add(const std::string& name, int rows, int cols, bool symmetric) {
  if (contains(name)) throw std::logic_error("state block declared twice: " + name);
  if (symmetric && rows != cols) throw std::logic_error("symmetric block must be square: " + name);
  blocks_.push_back({name, rows, cols, symmetric, size_});
  size_ += rows * cols;
  return *this;
}

StateLayout& StateLayout::add_vector(const std::string& name, int n) {
  add(name, n, 1);
  blocks_.back().vector = true;
  return *this;
}

bool StateLayout::contains(const std::string& name) const {
  for (const auto& b : blocks_)
    if (b.name == name) return true;
  return false;
}

const Block& StateLayout::block(const std::string& name) const {
  for (const auto& b : blocks_)
    if (b.name == name) return b;
  throw std::logic_error("unknown state block: " + name);
}

Eigen::Map<Eigen::MatrixXd> StateLayout::view(double* x, const std::string& name) const {
  const Block& b = block(name);
  return {x + b.offset, b.rows, b.cols};
}
Eigen::Map<const Eigen::MatrixXd> StateLayout::view(const double* x, const std::string& name) const {
  const Block& b = block(name);
  return {x + b.offset, b.rows, b.cols};
}
Eigen::Map<Eigen::MatrixXd> StateLayout::view(Eigen::VectorXd& x, const std::string& name) const {
  return view(x.data(), name);
}
Eigen::Map<const Eigen::MatrixXd> StateLayout::view(const Eigen::VectorXd& x, const std::string& name) const {
  return view(x.data(), name);
}

std::vector<std::string> StateLayout::columns(const std::string& suffix) const {
  std::vector<std::string> out;
  for (const auto& b : blocks_)
    for (int i = 0; i < b.rows; ++i)
      for (int j = b.symmetric ? i : 0; j < b.cols; ++j)
        out.push_back(b.vector ? fmt::format("{}_{}{}", b.name, i, suffix) : fmt::format("{}_{}_{}{}", b.name, i, j, suffix));
  return out;
}

Eigen::VectorXd StateLayout::from_values(const std::vector<double>& values) const {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(size_);
  std::size_t k = 0;
  for (const auto& b : blocks_) {
    auto m = view(x, b.name);
    for (int i = 0; i < b.rows; ++i)
      for (int j = b.symmetric ? i : 0; j < b.cols; ++j) {
        if (k >= values.size()) throw std::logic_error("StateLayout::from_values: too few values");
        m(i, j) = values[k++];
        if (b.symmetric) m(j, i) = m(i, j);
      }
  }
  return x;
}

std::vector<int> StateLayout::listed() const {
  std::vector<int> out;
  for (const auto& b : blocks_)
    for (int i = 0; i < b.rows; ++i)
      for (int j = b.symmetric ? i : 0; j < b.cols; ++j) out.push_back(b.offset + i + j * b.rows);  // column-major storage
  return out;
}

std::vector<double> StateLayout::values(const Eigen::VectorXd& x) const {
  std::vector<double> out;
  for (const auto& b : blocks_) {
    auto m = view(x, b.name);
    for (int i = 0; i < b.rows; ++i)
      for (int j = b.symmetric ? i : 0; j < b.cols; ++j) out.push_back(m(i, j));
  }
  return out;
}

std::string StateLayout::component_name(int k) const {
  for (const auto& b : blocks_)
    if (k >= b.offset && k < b.offset + b.size()) {
      const int local = k - b.offset;
      if (b.vector) return fmt::format("{}_{}", b.name, local);
      return fmt::format("{}_{}_{}", b.name, local % b.rows, local / b.rows);  // column-major storage
    }
  return fmt::format("component {}", k);
}

}  // namespace hdat
