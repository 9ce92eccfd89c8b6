#pragma once
// Reading back the gnuplot scripts hdat::plot writes (DIR/<figure>.gp), for tests: the inline data
// blocks and what each `plot` command draws.
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace hdat::testing {

struct GnuplotScript {
  std::map<std::string, int> rows;               ///< data block ($d0, $cells ...) -> its data rows
  std::vector<std::vector<std::string>> plots;   ///< per plot command: the data blocks it draws
  std::vector<std::string> lines;                ///< every line outside the data blocks

  explicit GnuplotScript(const std::string& text) {
    std::istringstream in(text);
    std::string line, block, command;
    bool in_plot = false;
    while (std::getline(in, line)) {
      if (!block.empty()) {
        if (line == "EOD") block.clear();
        else if (!line.empty()) ++rows[block];
        continue;
      }
      const auto eod = line.find(" << EOD");
      if (!line.empty() && line[0] == '$' && eod != std::string::npos) {
        block = line.substr(0, eod);
        rows[block];
        continue;
      }
      lines.push_back(line);
      if (line.rfind("plot ", 0) == 0) in_plot = true, command.clear();
      if (in_plot) {
        command += line;
        if (line.empty() || line.back() != '\\') {
          in_plot = false;
          std::vector<std::string> used;
          for (std::size_t p = command.find('$'); p != std::string::npos; p = command.find('$', p + 1)) {
            std::size_t e = p + 1;
            while (e < command.size() && (std::isalnum(static_cast<unsigned char>(command[e])) || command[e] == '_')) ++e;
            used.push_back(command.substr(p, e - p));
          }
          plots.push_back(used);
        }
      }
    }
  }

  /// Does some plot command draw nothing from a data block with rows? ("" when every one does)
  std::string empty_plot() const {
    for (std::size_t k = 0; k < plots.size(); ++k) {
      bool any = false;
      for (const auto& b : plots[k]) any = any || (rows.count(b) && rows.at(b) > 0);
      if (!any) return "plot command " + std::to_string(k) + " draws no data";
    }
    for (const auto& [b, n] : rows)
      if (n == 0 && b.rfind("$d", 0) == 0) return "data block " + b + " is empty";
    return "";
  }
  bool has_line(const std::string& start) const {
    for (const auto& l : lines)
      if (l.rfind(start, 0) == 0) return true;
    return false;
  }
};

}  // namespace hdat::testing
