#pragma once
// Running the hdat program from tests (it is ${HDAT_BINARY_DIR}/hdat, the test harness sets the
// variable): blocking runs with captured output, and a child process the test can kill.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "hdat/core/table.hpp"

namespace clitest {

inline std::string binary() {
  const char* dir = std::getenv("HDAT_BINARY_DIR");
  if (!dir) throw std::runtime_error("HDAT_BINARY_DIR is not set (run the tests through ctest)");
  return std::string(dir) + "/hdat";
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Result {
  int code = -1;
  std::string out, err;
};

/// Run `prefix hdat args` through the shell; stdout and stderr captured.
inline Result run(const std::string& args, const std::string& prefix = "") {
  const auto base = std::filesystem::temp_directory_path() / ("hdat-test-cli-" + std::to_string(::getpid()));
  const std::string out = base.string() + ".out", err = base.string() + ".err";
  const std::string cmd = prefix + (prefix.empty() ? "" : " ") + "'" + binary() + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

/// Start hdat in the background (its output discarded); returns the process id.
inline pid_t spawn(const std::string& args) {
  const std::string cmd = "exec '" + binary() + "' " + args + " >/dev/null 2>&1";
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

/// Wait for a child; its exit code (128 + signal when killed).
inline int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::size_t count_files(const std::filesystem::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator(); ++it)
    if (it->path().extension() == ".json") ++n;
  return n;
}

/// A sweep.csv without its wall_seconds column (the one column that differs between runs).
inline std::string sweep_without_wall(const std::filesystem::path& csv) {
  const hdat::Table t = hdat::Table::read_csv_file(csv.string());
  std::string s;
  for (std::size_t r = 0; r <= t.rows(); ++r) {
    for (std::size_t c = 0; c < t.columns().size(); ++c) {
      if (t.columns()[c] == "wall_seconds") continue;
      s += (r == 0 ? t.columns()[c] : t.text(r - 1, t.columns()[c])) + "|";
    }
    s += "\n";
  }
  return s;
}

}  // namespace clitest
