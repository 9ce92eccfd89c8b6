#pragma once
// Parameter sweeps: run a model command (curve, simulate, ...) at every point of a grid, in parallel
// threads, persisting each finished point at once so that an interrupted sweep resumes where it
// stopped, and gather one scalar row per point into DIR/sweep.csv.
//
// Folder layout:
//   DIR/points/<hash>.json  one finished point: status, reason, wall time, the command's info and tables
//   DIR/sweep.json          the sweep's definition (model, command, base config, grid, observables);
//                           identical for every shard, so `hdat sweep --merge --out DIR` can rebuild it
//   DIR/sweep.csv           one row per point: swept keys, observables, status, reason, wall_seconds, hash
//   DIR/run.json            provenance, definition, counts, failures, throughput
//
// Determinism: a point's result depends only on its resolved parameters (the model seeds its own
// streams from them); points run with RunContext.threads = point_threads (1 by default) and share no
// state, so sweep.csv is the same, apart from wall_seconds, for any number of threads, shards or ranks.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"
#include "hdat/sweep/grid.hpp"
#include "hdat/sweep/observable.hpp"

namespace hdat::sweep {

/// What determines a sweep's points and columns (DIR/sweep.json).
struct Definition {
  std::string model;
  std::string command;                   ///< model command: curve (mode theory), simulate, ...
  nlohmann::json base_config;            ///< the base keys the user set (dotted), before the grid; resolved again on --merge
  std::vector<std::string> grid;         ///< --grid arguments as given
  std::vector<std::string> observables;  ///< as given, or the model's defaults
  nlohmann::json to_json() const;
  static Definition from_json(const nlohmann::json& j);  ///< InputError on a malformed file
};

/// "theory" -> "curve", "simulate" -> "simulate"; any other name of a model command passes through.
std::string command_for_mode(const ModelEntry& model, const std::string& mode);

/// A checked sweep: axes, observables and every point resolved. Building it validates all input, so
/// a bad grid or value is reported before anything is written.
struct Plan {
  const ModelEntry* model = nullptr;
  std::string command;
  Params base;
  std::vector<Axis> axes;
  std::vector<Observable> observables;
  std::vector<Point> points;
  Definition definition;
};
Plan make_plan(const ModelEntry& model, const std::string& command, const Params& base, const std::vector<std::string>& grid,
               std::vector<std::string> observables);

/// Statuses of a finished point. "ok", "disagree" and "undecided" (a validate run whose verdict is 1
/// or 5) are results; the others are failures with a reason.
///   ok, disagree, undecided, numerical_failure (exit code 3 or NumericalError), nonfinite (a column of the main
///   table, not an error bar, whose last value is non-finite after finite ones), input_error (the command rejected the point), error (any other
///   exception), failed (any other exit code).
bool is_failure(const std::string& status);

/// The scalar result of one point (a sweep.csv row).
struct Row {
  bool present = false;      ///< false: not computed yet (status "pending")
  std::string status = "pending", reason;
  double wall_seconds = 0;
  std::vector<double> values;  ///< one per observable
  nlohmann::json to_json() const;
  static Row from_json(const nlohmann::json& j);
};

/// Run one point (never throws for a failure of the command; it becomes the status). Returns the
/// record that DIR/points/<hash>.json holds, as JSON.
nlohmann::json run_point(const Plan& plan, const Point& point, int point_threads);

/// The row of a point record (observables evaluated on the stored tables and info; NaN for a failure).
Row row_from_record(const Plan& plan, const nlohmann::json& record);

/// A finished point's record from DIR/points, if it is there and belongs to this point (same model,
/// command and parameters); nullopt otherwise (absent, unreadable, or a hash collision).
std::optional<nlohmann::json> load_point(const std::filesystem::path& dir, const Plan& plan, const Point& point);
std::filesystem::path point_path(const std::filesystem::path& dir, const Point& point);

struct RunOptions {
  int threads = 0;             ///< concurrent points; 0: all cores
  int point_threads = 1;       ///< RunContext.threads of each point
  bool quiet = false;          ///< no progress line
  bool retry_failed = false;   ///< recompute points whose stored status is a failure
  std::string progress_label = "sweep";
  /// Called (serialised) after each point computed here, e.g. to refresh sweep.csv now and then.
  std::function<void(std::size_t index, const Row& row)> on_finished;
};

struct RunCounts {
  std::size_t assigned = 0;   ///< points this process was responsible for
  std::size_t reused = 0;     ///< found finished in DIR/points
  std::size_t computed = 0;   ///< computed now
  std::size_t failed = 0;     ///< failures among reused + computed
  std::size_t pending = 0;    ///< not finished (interrupted)
  double wall_seconds = 0;
  double point_seconds = 0;   ///< sum of the computed points' wall times
  bool interrupted = false;
  nlohmann::json to_json() const;
  RunCounts& operator+=(const RunCounts& o);
};

/// Load or compute the points with the given indices (persisting each computed one at once under
/// dir/points). rows has one entry per plan point; only the given indices are touched. Stops taking
/// new points once hdat::interrupted() is set.
RunCounts run_points(const Plan& plan, const std::filesystem::path& dir, const std::vector<std::size_t>& indices,
                     const RunOptions& options, std::vector<Row>& rows);

/// Indices of shard i of n (round robin: index % n == i); the MPI ranks split the grid the same way.
std::vector<std::size_t> shard_indices(std::size_t points, std::size_t shard, std::size_t shards);

/// sweep.csv: swept keys, observables, status, reason, wall_seconds, hash (one row per point, in
/// grid order; unfinished points have status "pending").
Table assemble(const Plan& plan, const std::vector<Row>& rows);

/// run.json of a sweep.
nlohmann::json run_record(const Plan& plan, const RunCounts& counts, const std::vector<Row>& rows, const nlohmann::json& execution);

/// Write sweep.csv and run.json (atomically).
void write_results(const std::filesystem::path& dir, const Plan& plan, const std::vector<Row>& rows, const RunCounts& counts,
                   const nlohmann::json& execution);

}  // namespace hdat::sweep
