#pragma once
// The theory curve of a configuration: the flow (reduced where it exists, else full) integrated
// through the observation times with the normalisation's events, and the observables per time.
#include <nlohmann/json.hpp>

#include "hdat/core/table.hpp"
#include "hdat/polarization/flow.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"

namespace hdat::polarization {

struct CurveResult {
  Table table;           ///< curve.csv
  FlowResult flow;       ///< states, events, solver statistics
  nlohmann::json info;   ///< for run.json: "solver", "events", "instance", "flow", "asymptotics"
  bool ok = true;        ///< false: the integration failed (non-finite, diverged, step underflow ...)
};

CurveResult theory_curve(const Config& c, const Instance& in);

/// The spec's asymptotic predictions for the logistic softmax flow from a(0) = 0, compared with the
/// last row of a curve: (1 − s_top) log² t → 2 b (T − 1)/T, z − log t → log b, winner = argmax u(0).
nlohmann::json asymptotics(const Config& c, const Instance& in, const Table& table);

}  // namespace hdat::polarization
