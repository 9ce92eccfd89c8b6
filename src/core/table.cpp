#include "hdat/core/table.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "hdat/core/error.hpp"

namespace hdat {

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{}", x);  // shortest round-trip representation
}

int Table::column_index(const std::string& name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i] == name) return static_cast<int>(i);
  return -1;
}

void Table::add_row(std::vector<Cell> row) {
  if (row.size() != columns_.size())
    throw std::logic_error(fmt::format("table row has {} cells for {} columns", row.size(), columns_.size()));
  rows_.push_back(std::move(row));
}

void Table::add_column(const std::string& name, const std::vector<double>& values) {
  if (values.size() != rows_.size())
    throw std::logic_error(fmt::format("column '{}' has {} values for {} rows", name, values.size(), rows_.size()));
  if (has_column(name)) throw std::logic_error(fmt::format("table already has a column '{}'", name));
  columns_.push_back(name);
  for (std::size_t i = 0; i < rows_.size(); ++i) rows_[i].push_back(values[i]);
}

void Table::add_row(const std::vector<double>& row) {
  std::vector<Cell> r(row.begin(), row.end());
  add_row(std::move(r));
}

double Table::number(std::size_t r, const std::string& column) const {
  const int c = column_index(column);
  if (c < 0) throw std::out_of_range("no column '" + column + "'");
  const Cell& cell = rows_.at(r)[static_cast<std::size_t>(c)];
  if (const double* d = std::get_if<double>(&cell)) return *d;
  return std::nan("");
}

std::string Table::text(std::size_t r, const std::string& column) const {
  const int c = column_index(column);
  if (c < 0) throw std::out_of_range("no column '" + column + "'");
  const Cell& cell = rows_.at(r)[static_cast<std::size_t>(c)];
  if (const std::string* s = std::get_if<std::string>(&cell)) return *s;
  return format_number(std::get<double>(cell));
}

std::vector<double> Table::numbers(const std::string& column) const {
  std::vector<double> out;
  for (std::size_t r = 0; r < rows_.size(); ++r) out.push_back(number(r, column));
  return out;
}

namespace {
std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool inq = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (inq) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') inq = false;
      else cur += c;
    } else if (c == '"') inq = true;
    else if (c == ',') out.push_back(cur), cur.clear();
    else cur += c;
  }
  out.push_back(cur);
  return out;
}
}  // namespace

std::string Table::to_csv() const {
  std::string out;
  for (std::size_t i = 0; i < columns_.size(); ++i) out += (i ? "," : "") + quoted(columns_[i]);
  out += '\n';
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      if (const double* d = std::get_if<double>(&row[i])) out += format_number(*d);
      else out += quoted(std::get<std::string>(row[i]));
    }
    out += '\n';
  }
  return out;
}

Table Table::from_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) throw InputError("", "empty CSV");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  Table t(split_csv_line(line));
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto cells = split_csv_line(line);
    if (cells.size() != t.columns_.size()) throw InputError("", "CSV row with a wrong number of cells: " + line);
    std::vector<Cell> row;
    for (const auto& c : cells) {
      double v = 0;
      const auto res = std::from_chars(c.data(), c.data() + c.size(), v);
      if (!c.empty() && res.ec == std::errc() && res.ptr == c.data() + c.size()) row.emplace_back(v);
      else if (c == "nan") row.emplace_back(std::nan(""));
      else if (c == "inf") row.emplace_back(INFINITY);
      else if (c == "-inf") row.emplace_back(-INFINITY);
      else row.emplace_back(c);
    }
    t.rows_.push_back(std::move(row));
  }
  return t;
}

Table Table::read_csv_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("", "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return from_csv(ss.str());
}

}  // namespace hdat
