#include "hdat/sweep/sweep.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "hdat/core/error.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/suggest.hpp"

namespace hdat::sweep {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPointFormat = "hdat-sweep-point/1";
constexpr const char* kSweepFormat = "hdat-sweep/1";


// The last non-empty line of a command's summary: where the models say why they stopped.
std::string last_line(const std::string& text) {
  std::size_t end = text.size();
  while (end > 0) {
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ')) --end;
    const auto begin = text.rfind('\n', end == 0 ? 0 : end - 1);
    const std::size_t b = begin == std::string::npos ? 0 : begin + 1;
    std::string line = text.substr(b, end - b);
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos) return line.substr(first);
    end = b;
  }
  return "";
}

// The first column (not an error bar) whose last value is non-finite although an earlier one is finite.
std::string went_nonfinite(const Table& t) {
  if (t.rows() < 2) return "";
  for (const auto& col : t.columns()) {
    bool error_bar = false;
    for (const char* suffix : {"_se", "_sd", "_std", "_err"}) {
      const std::string sfx = suffix;
      error_bar = error_bar || (col.size() > sfx.size() && col.compare(col.size() - sfx.size(), sfx.size(), sfx) == 0);
    }
    if (error_bar) continue;
    const int c = t.column_index(col);
    const double* last = std::get_if<double>(&t.row(t.rows() - 1)[static_cast<std::size_t>(c)]);
    if (!last || std::isfinite(*last)) continue;
    for (std::size_t r = 0; r + 1 < t.rows(); ++r)
      if (const double* d = std::get_if<double>(&t.row(r)[static_cast<std::size_t>(c)]); d && std::isfinite(*d)) return col;
  }
  return "";
}

}  // namespace

json Definition::to_json() const {
  return {{"format", kSweepFormat}, {"model", model}, {"command", command}, {"base_config", base_config}, {"grid", grid},
          {"observables", observables}};
}

Definition Definition::from_json(const json& j) {
  Definition d;
  try {
    if (j.value("format", "") != kSweepFormat) throw std::runtime_error("not an hdat sweep definition");
    d.model = j.at("model").get<std::string>();
    d.command = j.at("command").get<std::string>();
    d.base_config = j.at("base_config");
    d.grid = j.at("grid").get<std::vector<std::string>>();
    d.observables = j.at("observables").get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    throw InputError("--out", std::string("malformed sweep.json: ") + e.what());
  }
  return d;
}

std::string command_for_mode(const ModelEntry& model, const std::string& mode) {
  // "theory" is the model's curve; a model without a theory (sinks) runs its simulation by default.
  const std::string command = mode == "theory" ? (model.commands.count("curve") || !model.commands.count("simulate") ? "curve" : "simulate") : mode;
  if (!model.commands.count(command)) {
    std::vector<std::string> have;
    for (const auto& [k, v] : model.commands) have.push_back(k);
    throw InputError("--mode", fmt::format("model '{}' has no '{}' command{}; --mode takes theory, simulate or one of its commands",
                                           model.name, command, did_you_mean_among(command, have, "it has")));
  }
  return command;
}

namespace {

// An observable of a column is checked, before any point is computed, against the columns its table
// will have where the command declares them (ModelEntry::columns, at the first point); the rest
// (run.json entries, tables known only once written) on the first finished point (check_observables).
void check_known_columns(const Plan& plan) {
  if (!plan.model->columns || plan.points.empty()) return;
  std::map<std::string, Table> tables;
  for (const auto& [name, columns] : plan.model->columns(plan.command, plan.points.front().params)) tables.emplace(name, Table(columns));
  for (const auto& o : plan.observables) {
    if (o.kind == Observable::Kind::info || o.kind == Observable::Kind::bare) continue;
    const std::string name = o.table.empty() ? main_table_name(plan.command, tables) : o.table;
    if (!tables.count(name)) continue;  // not known beforehand
    if (const std::string why = missing(o, plan.command, tables, json::object()); !why.empty())
      throw InputError("--observable", fmt::format("'{}': {}", o.spec, why));
  }
}

}  // namespace

Plan make_plan(const ModelEntry& model, const std::string& command, const Params& base, const std::vector<std::string>& grid,
               std::vector<std::string> observables) {
  Plan plan;
  plan.model = &model;
  plan.command = command;
  plan.base = base;
  if (!model.commands.count(command)) command_for_mode(model, command);  // throws with the list of commands
  if (grid.empty()) throw InputError("--grid", "give at least one axis, e.g. --grid prior.scale=0.5:2:7");
  for (const auto& g : grid) plan.axes.push_back(parse_axis(g, model.params));
  if (observables.empty()) {
    // The model's defaults are read from one command's output; another command writes other tables.
    const std::string theory = command_for_mode(model, "theory");
    const auto declared = model.command_observables.find(command);
    observables = declared != model.command_observables.end() ? declared->second
                  : command == theory                         ? model.default_observables
                                                              : std::vector<std::string>{};
    if (observables.empty())
      throw InputError("--observable", fmt::format("model '{}' declares no default observables for its {} command; give --observable "
                                                   "(e.g. final:COLUMN of its main table, or info:PATH of its run.json)",
                                                   model.name, command));
  }
  std::set<std::string> labels;
  for (const auto& a : plan.axes) labels.insert(a.key);
  for (const auto& o : observables) {
    plan.observables.push_back(parse_observable(o));
    if (!labels.insert(plan.observables.back().label).second)
      throw InputError("--observable", fmt::format("'{}': the column name '{}' is taken; name it with label={}", o,
                                                   plan.observables.back().label, o));
  }
  for (const char* reserved : {"status", "reason", "wall_seconds", "hash"})
    if (labels.count(reserved)) throw InputError("--observable", fmt::format("the column name '{}' is reserved; name it with label=SPEC", reserved));
  plan.points = make_points(model, command, base, plan.axes);
  check_known_columns(plan);
  plan.definition.model = model.name;
  plan.definition.command = command;
  // What the user set, not the resolved defaults: re-resolving a default as if given would trip the
  // keys' conditions (aggregation is not given for bayes), and --merge re-resolves this definition.
  json given = json::object();
  for (auto it = base.flat().begin(); it != base.flat().end(); ++it)
    if (base.given(it.key())) given[it.key()] = it.value();
  plan.definition.base_config = given;
  plan.definition.grid = grid;
  plan.definition.observables = observables;
  return plan;
}

bool is_failure(const std::string& status) {
  return status != "ok" && status != "disagree" && status != "undecided" && status != "pending";
}

json Row::to_json() const {
  json v = json::array();
  for (double x : values) v.push_back(std::isfinite(x) ? json(x) : json(format_number(x)));
  return {{"present", present}, {"status", status}, {"reason", reason}, {"wall_seconds", wall_seconds}, {"values", v}};
}

Row Row::from_json(const json& j) {
  Row r;
  r.present = j.at("present").get<bool>();
  r.status = j.at("status").get<std::string>();
  r.reason = j.at("reason").get<std::string>();
  r.wall_seconds = j.at("wall_seconds").get<double>();
  for (const auto& v : j.at("values")) {
    if (v.is_number()) r.values.push_back(v.get<double>());
    else {
      const std::string s = v.get<std::string>();
      r.values.push_back(s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : std::nan(""));
    }
  }
  return r;
}

fs::path point_path(const fs::path& dir, const Point& point) { return dir / "points" / (point.hash + ".json"); }

json run_point(const Plan& plan, const Point& point, int point_threads) {
  json rec = {{"format", kPointFormat}, {"model", plan.model->name}, {"command", plan.command}, {"hash", point.hash},
              {"overrides", point.overrides}, {"params", point.params.flat()}};
  RunContext ctx;
  ctx.threads = point_threads;
  ctx.quiet = true;  // ctx.out stays empty: a point writes nothing but its record
  const auto t0 = std::chrono::steady_clock::now();
  std::string status = "ok", reason;
  int exit_code = code(ExitCode::ok);
  try {
    RunOutput out = plan.model->commands.at(plan.command)(point.params, ctx);
    exit_code = out.exit_code;
    json tables = json::object();
    for (const auto& [name, table] : out.tables) tables[name] = table.to_csv();
    rec["tables"] = tables;
    rec["info"] = out.info;
    rec["summary"] = out.summary;
    // A run that returns while the interrupt flag is up may have been cut short without saying so (a
    // model's observer can end its integration early and report success): it is not recorded, and a
    // resumed sweep computes it again.
    if (exit_code == code(ExitCode::interrupted) || interrupted()) {
      status = "interrupted";
    } else if (exit_code != code(ExitCode::ok)) {
      status = exit_code == code(ExitCode::numerical_failure)                         ? "numerical_failure"
               : exit_code == code(ExitCode::disagree) && plan.command == "validate" ? "disagree"
               : exit_code == code(ExitCode::undecided) && plan.command == "validate" ? "undecided"
                                                                                     : "failed";
      reason = fmt::format("exit code {}: {}", exit_code, last_line(out.summary));
    } else {
      // A run that says it succeeded but whose numbers went from finite to non-finite has failed all the
      // same. Columns that are never finite (undefined by design) and error bars (undefined for one
      // seed) say nothing about the state.
      const std::string main = main_table_name(plan.command, out.tables);
      if (!main.empty()) {
        const std::string column = went_nonfinite(out.tables.at(main));
        if (!column.empty()) {
          status = "nonfinite";
          reason = fmt::format("{} is non-finite in the last row of {} after finite values", column, main);
        }
      }
    }
  } catch (const ModelFailure&) {
    throw;  // the model's own error, not this point's outcome: it stops the sweep
  } catch (const InputError& e) {
    status = "input_error", reason = e.what();
  } catch (const NumericalError& e) {
    status = "numerical_failure", reason = e.what();
  } catch (const std::exception& e) {
    status = "error", reason = e.what();
  }
  if (interrupted()) status = "interrupted";  // an exception thrown because of the interrupt is no failure
  rec["status"] = status;
  rec["reason"] = reason;
  rec["exit_code"] = exit_code;
  rec["wall_seconds"] = seconds_since(t0);
  rec["point_threads"] = point_threads;
  return rec;
}

// The tables of a point's record (an empty or unreadable table is left out: its observables are NaN).
std::map<std::string, Table> tables_of(const json& record) {
  std::map<std::string, Table> tables;
  if (record.contains("tables"))
    for (auto it = record["tables"].begin(); it != record["tables"].end(); ++it) {
      try {
        tables[it.key()] = Table::from_csv(it.value().get<std::string>());
      } catch (const std::exception&) {
        // an empty table: its observables are NaN
      }
    }
  return tables;
}

// A misspelt observable stops the sweep at its first finished point (exit 2, naming it), not as a
// column of NaN beside status ok.
void check_observables(const Plan& plan, const json& record) {
  if (is_failure(record.at("status").get<std::string>())) return;
  const auto tables = tables_of(record);
  const json info = record.value("info", json::object());
  for (const auto& o : plan.observables)
    if (const std::string why = missing(o, plan.command, tables, info); !why.empty())
      throw InputError("--observable", fmt::format("'{}': {}", o.spec, why));
}

Row row_from_record(const Plan& plan, const json& record) {
  Row r;
  r.present = true;
  r.status = record.at("status").get<std::string>();
  r.reason = record.value("reason", "");
  r.wall_seconds = record.value("wall_seconds", std::nan(""));
  const std::map<std::string, Table> tables = tables_of(record);
  const json info = record.value("info", json::object());
  // A failed run's numbers (the rows before it stopped) would read like results in a phase diagram:
  // its observables are NaN; the point file keeps what it computed.
  for (const auto& o : plan.observables)
    r.values.push_back(is_failure(r.status) ? std::nan("") : evaluate(o, plan.command, tables, info));
  return r;
}

std::optional<json> load_point(const fs::path& dir, const Plan& plan, const Point& point) {
  const fs::path f = point_path(dir, point);
  std::error_code ec;
  if (!fs::exists(f, ec)) return std::nullopt;
  json rec;
  try {
    rec = json::parse(read_file(f));
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable: computed again and rewritten
  }
  if (!rec.is_object() || rec.value("format", "") != kPointFormat || rec.value("model", "") != plan.model->name ||
      rec.value("command", "") != plan.command || !rec.contains("params") || rec["params"] != point.params.flat() ||
      !rec.contains("status"))
    return std::nullopt;
  return rec;
}

json RunCounts::to_json() const {
  return {{"assigned", assigned}, {"reused", reused}, {"computed", computed}, {"failed", failed}, {"pending", pending},
          {"wall_seconds", wall_seconds}, {"point_seconds", point_seconds}, {"interrupted", interrupted}};
}

RunCounts& RunCounts::operator+=(const RunCounts& o) {
  assigned += o.assigned, reused += o.reused, computed += o.computed, failed += o.failed, pending += o.pending;
  wall_seconds = std::max(wall_seconds, o.wall_seconds);
  point_seconds += o.point_seconds;
  interrupted = interrupted || o.interrupted;
  return *this;
}

RunCounts run_points(const Plan& plan, const fs::path& dir, const std::vector<std::size_t>& indices, const RunOptions& options,
                     std::vector<Row>& rows) {
  const auto t0 = std::chrono::steady_clock::now();
  RunCounts counts;
  counts.assigned = indices.size();
  rows.resize(plan.points.size());
  std::vector<std::size_t> to_run;
  for (std::size_t idx : indices) {
    const Point& p = plan.points.at(idx);
    if (auto rec = load_point(dir, plan, p); rec && !(options.retry_failed && is_failure((*rec)["status"].get<std::string>()))) {
      check_observables(plan, *rec);
      rows[idx] = row_from_record(plan, *rec);
      ++counts.reused;
      if (is_failure(rows[idx].status)) ++counts.failed;
    } else {
      to_run.push_back(idx);
    }
  }

  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), std::max<std::size_t>(1, to_run.size())));
  Progress progress(options.progress_label, static_cast<long>(to_run.size()), !options.quiet && !to_run.empty());
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr fatal;

  auto worker = [&] {
    // Models that parallelise with OpenMP see the point's thread budget, not the whole machine.
    omp_set_num_threads(std::max(1, options.point_threads));
    for (;;) {
      if (interrupted()) return;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (fatal) return;
      }
      const std::size_t k = next++;
      if (k >= to_run.size()) return;
      const std::size_t idx = to_run[k];
      const Point& p = plan.points[idx];
      try {
        json rec = run_point(plan, p, options.point_threads);
        if (rec["status"] == "interrupted") return;  // unfinished: not recorded, computed again on resume
        check_observables(plan, rec);
        const std::string text = rec.dump() + "\n";
        write_file_atomic(point_path(dir, p), text);
        // The row comes from the record as stored, so a resumed sweep reads exactly the same numbers.
        Row row = row_from_record(plan, json::parse(text));
        std::lock_guard<std::mutex> lock(mutex);
        ++counts.computed;
        counts.point_seconds += row.wall_seconds;
        if (is_failure(row.status)) ++counts.failed;
        rows[idx] = row;
        if (options.on_finished) options.on_finished(idx, rows[idx]);
        progress.advance(1, counts.failed ? fmt::format("{} failed", counts.failed) : "");
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!fatal) fatal = std::current_exception();
        return;
      }
    }
  };
  if (threads == 1) {
    const int omp_before = omp_get_max_threads();
    worker();
    omp_set_num_threads(omp_before);  // the worker ran on the caller's thread
  } else {
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  progress.finish();
  if (fatal) std::rethrow_exception(fatal);  // e.g. the disk is full: the finished points are on disk
  counts.pending = counts.assigned - counts.reused - counts.computed;
  counts.interrupted = counts.pending > 0 && interrupted();
  counts.wall_seconds = seconds_since(t0);
  return counts;
}

std::vector<std::size_t> shard_indices(std::size_t points, std::size_t shard, std::size_t shards) {
  std::vector<std::size_t> out;
  for (std::size_t i = shard; i < points; i += shards) out.push_back(i);
  return out;
}

Table assemble(const Plan& plan, const std::vector<Row>& rows) {
  std::vector<std::string> cols;
  for (const auto& a : plan.axes) cols.push_back(a.key);
  for (const auto& o : plan.observables) cols.push_back(o.label);
  for (const char* c : {"status", "reason", "wall_seconds", "hash"}) cols.emplace_back(c);
  Table t(cols);
  for (std::size_t i = 0; i < plan.points.size(); ++i) {
    const Point& p = plan.points[i];
    const Row empty;
    const Row& r = i < rows.size() ? rows[i] : empty;
    std::vector<Cell> cells;
    for (const auto& a : plan.axes) {
      const json& v = p.overrides.at(a.key);
      if (v.is_number()) cells.emplace_back(v.get<double>());
      else if (v.is_string()) cells.emplace_back(v.get<std::string>());
      else cells.emplace_back(v.dump());
    }
    for (std::size_t k = 0; k < plan.observables.size(); ++k)
      cells.emplace_back(r.present && k < r.values.size() ? r.values[k] : std::nan(""));
    cells.emplace_back(r.present ? r.status : std::string("pending"));
    cells.emplace_back(r.reason);
    cells.emplace_back(r.present ? r.wall_seconds : std::nan(""));
    cells.emplace_back(p.hash);
    t.add_row(std::move(cells));
  }
  return t;
}

json run_record(const Plan& plan, const RunCounts& counts, const std::vector<Row>& rows, const json& execution) {
  json rec = provenance();
  rec["model"] = plan.model->name;
  rec["command"] = "sweep";
  rec["mode"] = plan.command;
  rec["config"] = plan.base.nested();
  json axes = json::array();
  for (const auto& a : plan.axes) axes.push_back(a.to_json());
  rec["grid"] = axes;
  json obs = json::array();
  for (const auto& o : plan.observables) obs.push_back({{"label", o.label}, {"spec", o.spec}});
  rec["observables"] = obs;
  std::map<std::string, std::size_t> by_status;
  json failures = json::array();
  std::size_t finished = 0;
  for (std::size_t i = 0; i < plan.points.size(); ++i) {
    const std::string status = i < rows.size() && rows[i].present ? rows[i].status : "pending";
    ++by_status[status];
    if (status != "pending") ++finished;
    if (is_failure(status) && failures.size() < 200)
      failures.push_back({{"point", plan.points[i].overrides}, {"hash", plan.points[i].hash}, {"status", status}, {"reason", rows[i].reason}});
  }
  rec["points"] = {{"total", plan.points.size()}, {"finished", finished}, {"by_status", by_status}};
  rec["this_run"] = counts.to_json();
  rec["failures"] = failures;
  rec["execution"] = execution;
  rec["wall_seconds"] = counts.wall_seconds;
  rec["throughput_points_per_second"] = counts.wall_seconds > 0 ? static_cast<double>(counts.computed) / counts.wall_seconds : 0.0;
  rec["mean_point_seconds"] = counts.computed ? counts.point_seconds / static_cast<double>(counts.computed) : 0.0;
  rec["files"] = {{"table", "sweep.csv"}, {"points", "points/<hash>.json"}, {"definition", "sweep.json"}};
  return rec;
}

void write_results(const fs::path& dir, const Plan& plan, const std::vector<Row>& rows, const RunCounts& counts, const json& execution) {
  write_file_atomic(dir / "sweep.csv", assemble(plan, rows).to_csv());
  write_file_atomic(dir / "run.json", run_record(plan, counts, rows, execution).dump(2) + "\n");
}

}  // namespace hdat::sweep
