#pragma once
// Theory against simulation (`hdat validate polarization`).
//
// The flow (reduced where it exists, else full) is started from the order parameters measured on the
// simulator's initial parameters, and gradient descent is run at η, η/2, ..., η/2^halvings. At the
// common times t = k η (multiples of the largest η) the gap is
//   gap(η) = max_t max( |s_GD − s_flow|_∞, |a_GD − a_flow|_∞ / (1 + |a|_∞), |u_GD − u_flow|_∞ / (1 + |u|_∞) ).
// Gradient descent is the explicit Euler scheme of the flow, so gap(η) = O(η): the verdict "agree"
// needs (i) gap at the smallest η ≤ tolerance, (ii) an observed order log2(gap(η)/gap(η/2)) ≥ min_order
// at every halving (or a gap already at round-off, < 1e-9), (iii) the identities of every step
// (drift check of the reduced right-hand side, conservation laws) to hold to round-off, and (iv) a
// finite run of both. A wrong term in the flow (e.g. the replicator sign) leaves an O(1) gap that does
// not shrink with η: the verdict is then "disagree".
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/table.hpp"
#include "hdat/polarization/curve.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/gd.hpp"

namespace hdat::polarization {

struct Gap {
  double total = 0, s = 0, a = 0, u = 0;
  double t_worst = 0;
  int compared = 0;  ///< rows matched by time (the gaps are NaN when none)
};

/// Times rounded to whole steps k·lr (sorted, unique): where gradient descent and the flow meet.
std::vector<double> on_step_grid(const std::vector<double>& times, double lr);

/// Gap between a GD table and a flow table at the GD table's times (rows matched by t).
Gap gap_between(const Config& c, const Table& gd, const Table& flow, double t_limit);

struct Validation {
  bool agree = false;
  CurveResult theory;               ///< the flow at the common times
  std::vector<double> lrs;          ///< η, η/2, ...
  std::vector<GdRun> runs;          ///< gradient descent per η
  std::vector<Gap> gaps;
  std::vector<double> orders;       ///< log2(gap_k / gap_{k+1})
  std::vector<std::string> failures;  ///< why not (empty when agree)
  Table convergence;                ///< lr, gap, gap_s, gap_a, gap_u, order
  Table comparison;                 ///< per time at the smallest η: theory vs GD
  nlohmann::json info;
  std::string summary;
};

Validation validate(const Config& c, const Instance& in, bool quiet = true);

}  // namespace hdat::polarization
