#pragma once
// Scalar observables of a run, read from what a model command returned (its tables and info):
//   final:COL  (or last:COL)   last row of the main table, column COL
//   min:COL, max:COL           extremes of COL over the main table (NaN rows ignored)
//   argmin:COL, argmax:COL     value of the first column where COL is extreme (e.g. the time of the minimum)
//   at:X:COL                   COL interpolated linearly at first-column value X (NaN outside the range)
//   cross:COL:V                first first-column value at which COL crosses V (interpolated; NaN if never)
//   info:a.b.c                 a number in the command's info (run.json); list entries by index (info:final.M.0.1)
//   table:NAME:REDUCTION       one of the above reductions on another table, e.g. table:prune.csv:last:risk
//   NAME                       shorthand: final:NAME when the main table has that column, else info:NAME,
//                              else info:observables.NAME
// An optional "label=" prefix names the sweep.csv column; otherwise the column is named after the spec
// (final:risk -> final_risk, info:events.plateau_end -> events.plateau_end, at:10:risk -> risk_at_10).
// An out-of-range request gives NaN (the row keeps its status); a missing column or key stops the sweep
// at its first finished point (missing()).
#include <map>
#include <string>

#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"

namespace hdat::sweep {

struct Observable {
  std::string label;  ///< sweep.csv column
  std::string spec;   ///< as given (without the label)
  enum class Kind { final, min, max, argmin, argmax, at, cross, info, bare } kind = Kind::final;
  std::string table;  ///< empty: the main table
  std::string column; ///< COL, or the info path, or the bare name
  double x = 0;       ///< at: X, cross: V
};

/// Parse (InputError with key "--observable" and the allowed forms on a malformed spec).
Observable parse_observable(const std::string& text);

/// The table a command's observables refer to by default: curve.csv for curve, sim.csv for simulate,
/// validate.csv for validate, else the first table.
std::string main_table_name(const std::string& command, const std::map<std::string, Table>& tables);

/// Evaluate on a command's output (tables + info). NaN when not available.
double evaluate(const Observable& o, const std::string& command, const std::map<std::string, Table>& tables,
                const nlohmann::json& info);

/// Why `o` names nothing in a command's output ("no column 'egg' in curve.csv; did you mean 'eg'? ..."),
/// or "" when it names a column or entry (whose value may still be NaN). A sweep checks its
/// observables on its first finished point, so that a misspelt one stops it before the rest is computed.
std::string missing(const Observable& o, const std::string& command, const std::map<std::string, Table>& tables,
                    const nlohmann::json& info);

}  // namespace hdat::sweep
