#include "hdat/core/output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

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

// The output folder was checked before the work (check_output_folder): a failure here is the disk's
// (full, removed meanwhile), reported in words, not as a library's exception text.
void write_file_atomic(const fs::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create the folder '{}' ({})", path.parent_path().string(), ec.message()));
  const fs::path tmp = path.parent_path() / fmt::format(".{}.tmp{}", path.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + tmp.string() + "'");
    out << content;
    out.flush();
    if (!out) throw std::runtime_error("failed writing '" + tmp.string() + "' (disk full?)");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("", "cannot read '" + path.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check_output_folder(const fs::path& dir, const std::string& key) {
  if (dir.empty()) throw InputError(key, "is empty: name the output folder (e.g. results/run1)");
  std::error_code ec;
  // The folders that do not exist yet, deepest first; an existing file on the way is not a folder.
  std::vector<fs::path> missing;
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec))
        throw InputError(key, fmt::format("'{}' is {}an existing file, not a folder: name a folder", p.string(), p == dir ? "" : "inside "));
      break;
    }
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  auto remove_created = [&] {
    for (const auto& p : missing) fs::remove(p, ec);  // deepest first; an empty folder we made
  };
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    if (!fs::create_directory(*it, ec) && ec) {
      const std::string why = ec.message();
      remove_created();
      throw InputError(key, fmt::format("cannot create the folder '{}' ({})", it->string(), why));
    }
  const fs::path probe = dir / fmt::format(".hdat-probe-{}", ::getpid());
  bool writable = false;
  {
    std::ofstream out(probe, std::ios::binary | std::ios::trunc);
    writable = static_cast<bool>(out << "probe\n" << std::flush);
  }
  fs::remove(probe, ec);
  remove_created();
  if (!writable) throw InputError(key, fmt::format("cannot write into the folder '{}' (no permission, or a read-only file system)", dir.string()));
}

namespace {

// A nested configuration as "a.b" -> value.
void flatten_into(const nlohmann::json& j, const std::string& prefix, std::map<std::string, nlohmann::json>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten_into(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = j;
}

// "eta: 0.5 -> 0.7, seeds: 8 -> 4" (at most four keys).
std::string config_difference(const nlohmann::json& before, const nlohmann::json& now) {
  std::map<std::string, nlohmann::json> a, b;
  flatten_into(before, "", a);
  flatten_into(now, "", b);
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  std::vector<std::string> parts;
  for (const auto& k : keys) {
    const auto x = a.find(k), y = b.find(k);
    const std::string old_value = x == a.end() ? "unset" : x->second.dump(), new_value = y == b.end() ? "unset" : y->second.dump();
    if (old_value != new_value) parts.push_back(fmt::format("{}: {} -> {}", k, old_value, new_value));
  }
  std::string text;
  for (std::size_t i = 0; i < parts.size() && i < 4; ++i) text += (i ? ", " : "") + parts[i];
  if (parts.size() > 4) text += fmt::format(" and {} more", parts.size() - 4);
  return text;
}

bool plain_relative(const fs::path& p) {
  if (p.empty() || p.is_absolute()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

}  // namespace

void claim_output_folder(const fs::path& dir, const OutputClaim& claim, bool replace, const std::string& key,
                         const std::string& replace_option) {
  const fs::path record = dir / "run.json";
  std::error_code ec;
  if (!fs::exists(record, ec)) return;
  const nlohmann::json rec = nlohmann::json::parse(read_file(record), nullptr, false);
  const bool readable = rec.is_object();
  const std::string model = readable ? rec.value("model", "") : "", command = readable ? rec.value("command", "") : "";
  const bool same_run = readable && model == claim.model && command == claim.command && rec.contains("config") && rec["config"] == claim.config;
  if (same_run) return;  // the same run: its finished work is found again
  if (replace) {
    clear_outputs(dir);
    return;
  }
  std::string what;
  if (!readable) what = "a run.json that is not hdat's";
  else if (model == claim.model && command == claim.command)
    what = fmt::format("the outputs of `hdat {} {}` with another configuration ({})", command, model,
                       config_difference(rec.value("config", nlohmann::json::object()), claim.config));
  else
    what = fmt::format("the outputs of `hdat {} {}`", command.empty() ? "?" : command, model.empty() ? "?" : model);
  throw InputError(key, fmt::format("'{}' holds {}: give {} to remove hdat's files there and write this run instead, or another folder",
                                    dir.string(), what, replace_option));
}

void clear_outputs(const fs::path& dir) {
  std::error_code ec;
  const fs::path record = dir / "run.json";
  if (fs::exists(record, ec)) {
    const nlohmann::json rec = nlohmann::json::parse(read_file(record), nullptr, false);
    if (rec.is_object() && rec.contains("outputs") && rec["outputs"].is_array())
      for (const auto& name : rec["outputs"])
        if (name.is_string() && plain_relative(name.get<std::string>())) fs::remove(dir / name.get<std::string>(), ec);
  }
  // What every hdat command may have written, whatever the record says (older records list nothing).
  for (const char* name : {"curve.csv", "sim.csv", "validate.csv", "validate_curves.csv", "escape.csv", "drift.csv", "validate.json",
                           "sweep.csv", "sweep.json", "run.json"})
    fs::remove(dir / name, ec);
  for (const char* folder : {"seeds", "points"}) fs::remove_all(dir / folder, ec);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file(ec) && (ext == ".png" || ext == ".svg" || ext == ".gp")) fs::remove(entry.path(), ec);
  }
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
