#pragma once
// A results table (one CSV file): named columns, rows of numbers or strings. Numbers are written
// in the shortest form that reads back to the same double.
#include <initializer_list>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace hdat {

using Cell = std::variant<double, std::string>;

class Table {
 public:
  Table() = default;
  explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}

  const std::vector<std::string>& columns() const { return columns_; }
  std::size_t rows() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  int column_index(const std::string& name) const;  // -1 if absent
  bool has_column(const std::string& name) const { return column_index(name) >= 0; }

  void add_row(std::vector<Cell> row);  // must match the column count
  void add_row(const std::vector<double>& row);
  void add_row(std::initializer_list<double> row) { add_row(std::vector<double>(row)); }  // {1.0, 2.0} is unambiguous
  /// Append a column (one value per row).
  void add_column(const std::string& name, const std::vector<double>& values);
  const std::vector<Cell>& row(std::size_t i) const { return rows_[i]; }
  double number(std::size_t row, const std::string& column) const;
  std::string text(std::size_t row, const std::string& column) const;
  std::vector<double> numbers(const std::string& column) const;

  std::string to_csv() const;
  static Table from_csv(const std::string& text);  // numbers where a cell parses as one
  static Table read_csv_file(const std::string& path);

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<Cell>> rows_;
};

std::string format_number(double x);

}  // namespace hdat
