#pragma once
// The paper's claims, reproduced (`hdat analyze polarization --set claim=NAME --out DIR`). Each claim
// runs the spec's setup (its preset replaces the keys left at their defaults; keys set explicitly
// win), compares with the spec's reference numbers and the theorems' predictions, and writes
//   claim.csv   one row per check: check, measured, reference, tolerance, pass, note
//   *.csv       the series behind the figure (curve.csv, sim.csv, per-run files)
//   claim.png   the figure (plot_claim)
// Claims: order, polarization, square, regression, normalizations, tied, sign (docs/polarization.md).
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/params.hpp"
#include "hdat/core/table.hpp"

namespace hdat::polarization {

/// One check of a claim: a row of claim.csv.
struct ClaimCheck {
  std::string name;
  double measured = 0, reference = 0, tolerance = 0;
  bool pass = false;
  std::string note;
};

struct ClaimResult {
  std::vector<ClaimCheck> checks;        ///< claim.csv (checks_table)
  std::map<std::string, Table> series;   ///< other CSV files
  nlohmann::json info;                   ///< setup actually used, solver statistics, events
  std::string summary;
  bool all_pass = true;
  /// claim.csv: check, measured, reference, tolerance, pass (1 or 0), note.
  Table checks_table() const;
};

/// The preset of a claim (the spec's setup), as flat key -> value.
nlohmann::json claim_preset(const std::string& claim);

/// Run a claim with the given parameters (the preset is applied to keys left at their defaults).
ClaimResult run_claim(const std::string& claim, const Params& p, bool quiet = true);

/// The figure of a claim's output folder (reads its CSV files).
void plot_claim(const std::string& claim, const std::filesystem::path& dir);

}  // namespace hdat::polarization
