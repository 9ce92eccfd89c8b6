#include "hdat/app/sweep.hpp"
#include "hdat/core/exit_code.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <optional>

#include "hdat/app/run.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/app/plot.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/sweep/plot.hpp"
#include "hdat/sweep/sweep.hpp"

namespace hdat::app {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::pair<std::size_t, std::size_t> parse_shard(const std::string& s) {
  const auto slash = s.find('/');
  long i = -1, n = -1;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    std::size_t u = 0, v = 0;
    i = std::stol(s.substr(0, slash), &u);
    n = std::stol(s.substr(slash + 1), &v);
    if (u != slash || v != s.size() - slash - 1) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw InputError("--shard", fmt::format("expected i/n with 0 <= i < n (e.g. 3/16), got '{}'", s));
  }
  if (n < 1 || i < 0 || i >= n) throw InputError("--shard", fmt::format("expected i/n with 0 <= i < n (e.g. 3/16), got '{}'", s));
  return {static_cast<std::size_t>(i), static_cast<std::size_t>(n)};
}

sweep::Plan build_plan(const SweepRequest& a, const fs::path& dir) {
  if (a.model.empty()) {
    if (!a.merge) throw InputError("MODEL", "is required (hdat sweep MODEL --grid ... --out DIR; see `hdat list`)");
    if (!a.grid.empty() || a.has_base_input())
      throw InputError("--merge", "without MODEL the sweep is read from DIR/sweep.json; give no --grid, --set or --config");
    if (!fs::exists(dir / "sweep.json")) throw InputError("--out", "no sweep.json in " + dir.string() + " (not a sweep folder)");
    const json j = json::parse(read_file(dir / "sweep.json"), nullptr, false);
    if (j.is_discarded()) throw InputError("--out", "malformed " + (dir / "sweep.json").string());
    const sweep::Definition d = sweep::Definition::from_json(j);
    const ModelEntry& model = registry().get(d.model);
    const Params base = resolve_for(model, d.base_config, {});
    return sweep::make_plan(model, d.command, base, d.grid, a.observables.empty() ? d.observables : a.observables);
  }
  const ModelEntry& model = registry().get(a.model);
  const std::string command = sweep::command_for_mode(model, a.mode);
  const Params base = resolve_for(model, a.config, a.assignments);
  return sweep::make_plan(model, command, base, a.grid, a.observables);
}

std::string counts_line(const sweep::Plan& plan, const std::vector<sweep::Row>& rows) {
  std::map<std::string, std::size_t> by;
  for (std::size_t i = 0; i < plan.points.size(); ++i) ++by[i < rows.size() && rows[i].present ? rows[i].status : "pending"];
  std::string s;
  for (const auto& [k, v] : by) s += (s.empty() ? "" : ", ") + fmt::format("{} {}", v, k);
  return s;
}

// The figures at the end (--plot), into the outcome.
void draw(const SweepRequest& a, const fs::path& dir, SweepOutcome& outcome) {
  if (!plot::available()) {
    outcome.notes += "hdat: gnuplot not found; no figures\n";
    return;
  }
  // As `hdat plot DIR` draws them (the caption with the base parameters, all or nothing).
  PlotRequest r;
  r.contours = a.contours;
  r.together = a.together;
  const PlotOutcome drawn = plot_folder(dir, r);
  outcome.notes += drawn.notes;
  for (const auto& png : drawn.figures) {
    outcome.figures.push_back(png);
    outcome.report += fmt::format("figure {} (.svg)\n", png.string());
  }
}

// The folders on the way to `dir` that do not exist yet, deepest first.
std::vector<fs::path> missing_folders(const fs::path& dir) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  return missing;
}

// A sweep refused on its first finished point (an observable its output does not have), or stopped
// by the model's own failure, leaves the folder as it found it: a new one's definition and the
// folders it made are removed (finished points are kept), an existing one's definition is put back.
void undo_refused_sweep(const fs::path& dir, const std::optional<std::string>& definition, const std::vector<fs::path>& made) {
  if (definition) {
    write_file_atomic(dir / "sweep.json", *definition);
    return;
  }
  std::error_code ec;
  if (fs::exists(dir / "points", ec) && !fs::is_empty(dir / "points", ec)) return;  // finished points: kept
  fs::remove(dir / "points", ec);
  fs::remove(dir / "sweep.json", ec);  // (sweep.csv is written only once a point is finished)
  for (const auto& p : made) fs::remove(p, ec);  // deepest first; only an empty folder goes
}

SweepOutcome merge(const SweepRequest& a, const sweep::Plan& plan, const fs::path& dir) {
  const auto t0 = std::chrono::steady_clock::now();
  SweepOutcome outcome;
  std::vector<sweep::Row> rows(plan.points.size());
  sweep::RunCounts counts;
  counts.assigned = plan.points.size();
  for (const auto& p : plan.points)
    if (auto rec = sweep::load_point(dir, plan, p)) {
      rows[p.index] = sweep::row_from_record(plan, *rec);
      ++counts.reused;
      if (sweep::is_failure(rows[p.index].status)) ++counts.failed;
    }
  counts.pending = counts.assigned - counts.reused;
  counts.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_file_atomic(dir / "sweep.json", plan.definition.to_json().dump(2) + "\n");
  sweep::write_results(dir, plan, rows, counts, {{"kind", "merge"}});
  outcome.report += fmt::format("sweep {} ({}): merged {} of {} points ({})\nwrote {}\n", plan.model->name, plan.command, counts.reused,
                                plan.points.size(), counts_line(plan, rows), (dir / "sweep.csv").string());
  if (counts.pending) {
    outcome.notes += fmt::format("hdat: {} points are not finished yet (status pending in sweep.csv)\n", counts.pending);
    outcome.exit_code = code(ExitCode::disagree);
    return outcome;
  }
  if (a.plot && plot::available()) draw(a, dir, outcome);
  return outcome;
}

}  // namespace

SweepOutcome run_sweep(const SweepRequest& a, sweep::Communicator& comm) {
  if (a.out.empty()) throw InputError("--out", "is required");
  const fs::path dir(a.out);
  check_output_folder(dir);  // first: a folder that cannot be written is said before any point is computed
  if (a.threads < 0) throw InputError("--threads", "must be >= 0 (0: all cores)");
  if (a.point_threads < 1) throw InputError("--point-threads", "must be >= 1");
  std::optional<std::pair<std::size_t, std::size_t>> shard;
  if (!a.shard.empty()) shard = parse_shard(a.shard);
  if (a.merge && shard) throw InputError("--merge", "assembles every shard's points; give it without --shard");
  const sweep::Plan plan = build_plan(a, dir);  // every input checked before anything is written
  if (a.plot && plan.points.size() < 2)
    throw InputError("--plot", "the grid has a single point: nothing to draw against; give a --grid key two or more values, or drop --plot");
  if (a.merge) return merge(a, plan, dir);

  if (comm.size() > 1 && shard) throw InputError("--shard", "is for separate jobs; under mpirun the ranks split the grid themselves");
  SweepOutcome outcome;
  outcome.root = comm.rank() == 0;
  const bool root = outcome.root;
  std::vector<sweep::Row> rows(plan.points.size());
  sweep::RunCounts counts;
  json execution;
  const std::optional<std::string> definition =
      fs::exists(dir / "sweep.json") ? std::optional<std::string>(read_file(dir / "sweep.json")) : std::nullopt;
  const std::vector<fs::path> made = missing_folders(dir);
  try {
    std::vector<std::size_t> indices;
    if (shard) indices = sweep::shard_indices(plan.points.size(), shard->first, shard->second);
    else indices = sweep::shard_indices(plan.points.size(), static_cast<std::size_t>(comm.rank()), static_cast<std::size_t>(comm.size()));
    if (root) write_file_atomic(dir / "sweep.json", plan.definition.to_json().dump(2) + "\n");

    sweep::RunOptions opt;
    opt.threads = a.threads > 0 ? a.threads : comm.default_threads();
    opt.point_threads = a.point_threads;
    opt.quiet = a.quiet || !root;
    opt.retry_failed = a.retry_failed;
    opt.progress_label = comm.size() > 1 ? fmt::format("sweep (rank 0 of {})", comm.size()) : shard ? "sweep (shard " + a.shard + ")" : "sweep";
    execution = {{"kind", comm.kind()}, {"ranks", comm.size()}, {"threads_per_rank", opt.threads}, {"point_threads", opt.point_threads},
                 {"shard", shard ? json(a.shard) : json()}};
    // A long single-process sweep refreshes sweep.csv now and then, so the map fills in while it runs.
    const bool refresh = comm.size() == 1 && !shard;
    auto last = std::chrono::steady_clock::now();
    if (refresh)
      opt.on_finished = [&](std::size_t, const sweep::Row&) {
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count() < 30) return;
        last = std::chrono::steady_clock::now();
        write_file_atomic(dir / "sweep.csv", sweep::assemble(plan, rows).to_csv());
      };
    // The start line goes to stderr at once (with the progress), not into the report.
    if (root && !a.quiet)
      fmt::print(stderr, "sweep {} ({}): {} points{} on {} thread(s){}\n", plan.model->name, plan.command, plan.points.size(),
                 shard ? fmt::format(", shard {} has {}", a.shard, indices.size()) : "", opt.threads,
                 comm.size() > 1 ? fmt::format(" x {} MPI ranks", comm.size()) : "");
    counts = sweep::run_points(plan, dir, indices, opt, rows);

    if (comm.size() > 1) {
      json mine = {{"counts", counts.to_json()}, {"rows", json::array()}};
      for (std::size_t i : indices) mine["rows"].push_back({i, rows[i].to_json()});
      const auto all = comm.gather(mine.dump());
      if (root) {
        sweep::RunCounts total = counts;
        for (std::size_t r = 1; r < all.size(); ++r) {
          const json j = json::parse(all[r]);
          for (const auto& e : j.at("rows")) rows.at(e.at(0).get<std::size_t>()) = sweep::Row::from_json(e.at(1));
          const json& c = j.at("counts");
          sweep::RunCounts rc;
          rc.assigned = c.at("assigned"), rc.reused = c.at("reused"), rc.computed = c.at("computed"), rc.failed = c.at("failed");
          rc.pending = c.at("pending"), rc.wall_seconds = c.at("wall_seconds"), rc.point_seconds = c.at("point_seconds");
          rc.interrupted = c.at("interrupted");
          total += rc;
        }
        counts = total;
      }
    }
    if (root && !shard) sweep::write_results(dir, plan, rows, counts, execution);
  } catch (const std::exception& e) {
    // Refused input and the model's own failure (a Python model's exception) give no result: the
    // folder is left as it was found. Anything else keeps what it wrote, for a resume.
    const bool refused = dynamic_cast<const InputError*>(&e) != nullptr;
    if (comm.size() > 1) {
      fmt::print(stderr, "hdat: rank {}: {}\n", comm.rank(), e.what());
      comm.abort(refused ? 2 : 4);
    }
    if (root && (refused || dynamic_cast<const ModelFailure*>(&e))) undo_refused_sweep(dir, definition, made);
    throw;
  }
  const bool stopped = comm.any(counts.interrupted || interrupted());
  outcome.exit_code = comm.broadcast(code(stopped ? ExitCode::interrupted : ExitCode::ok));
  if (!root) return outcome;

  const double rate = counts.wall_seconds > 0 ? static_cast<double>(counts.computed) / counts.wall_seconds : 0.0;
  if (shard) {
    outcome.report += fmt::format("sweep {} ({}), shard {}: {} points: computed {}, found finished {}, failed {}, not finished {}\n",
                                  plan.model->name, plan.command, a.shard, counts.assigned, counts.computed, counts.reused, counts.failed,
                                  counts.pending);
    outcome.report += fmt::format("wrote {} ({:.2f} s); when every shard is done: hdat sweep --merge --out {}\n", (dir / "points").string(),
                                  counts.wall_seconds, dir.string());
  } else {
    outcome.report += fmt::format("sweep {} ({}): {} points ({}); computed {} in {:.2f} s ({:.3g} points/s), {} found finished\n",
                                  plan.model->name, plan.command, plan.points.size(), counts_line(plan, rows), counts.computed,
                                  counts.wall_seconds, rate, counts.reused);
    if (counts.failed) outcome.report += fmt::format("  {} failed points: status and reason in sweep.csv and run.json\n", counts.failed);
    outcome.report += fmt::format("wrote {}\n", (dir / "sweep.csv").string());
  }
  if (outcome.exit_code == code(ExitCode::interrupted)) {
    outcome.notes += fmt::format("hdat: interrupted; finished points are kept in {} and the same command resumes\n", (dir / "points").string());
    return outcome;
  }
  if (a.plot && !shard) draw(a, dir, outcome);
  return outcome;
}

}  // namespace hdat::app
