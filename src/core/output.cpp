#include "hdat/core/output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "hdat/core/error.hpp"
#include "hdat_revision.hpp"
#include <cmath>

namespace hdat {
namespace fs = std::filesystem;

namespace {
std::string& command_line_storage() {
  static std::string s;
  return s;
}
}  // namespace

void write_file_atomic(const fs::path& path, const std::string& content) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const fs::path tmp = path.parent_path() / fmt::format(".{}.tmp{}", path.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError("--out", "cannot write '" + tmp.string() + "'");
    out << content;
    out.flush();
    if (!out) throw InputError("--out", "failed writing '" + tmp.string() + "'");
  }
  fs::rename(tmp, path);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("", "cannot read '" + path.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void set_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  command_line_storage() = s;
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json provenance() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return {{"program", "hdat"},
          {"version", HDAT_VERSION},
          {"git_revision", HDAT_GIT_REVISION},
          {"compiler", fmt::format("{} {}", "g++", __VERSION__)},
          {"host", host},
          {"date", now_iso8601()},
          {"command_line", command_line_storage()}};
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace hdat
