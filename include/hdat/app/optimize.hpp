#pragma once
// `hdat optimize MODEL` for every front end (the command line's tools/hdat/cmd_optimize.cpp and
// hdat.optimize in Python): the options from their texts, the run, and a Run that write_output
// writes like any command's (schedule.json, schedules.csv, risk_curves.csv, baselines.csv, run.json).
#include <map>
#include <string>
#include <vector>

#include "hdat/app/run.hpp"
#include "hdat/optimize/optimize.hpp"

namespace hdat::app {

/// "eta=0:2" (control=lo:hi) texts; InputError (key `bounds`) on a malformed one.
std::map<std::string, optimize::Bounds> parse_bounds(const std::vector<std::string>& texts);
/// "eta=0.5" (control=mean) texts; InputError (key `budget`) on a malformed one.
std::map<std::string, double> parse_budget(const std::vector<std::string>& texts);

/// Run the optimisation of `model` (a dynamics model with controllable parameters), timed. The
/// options are checked against the model before any work (InputError naming the option).
Run run_optimize(const ModelEntry& model, const Params& params, const optimize::OptimizeOptions& options, RunContext& ctx);

}  // namespace hdat::app
