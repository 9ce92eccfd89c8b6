#pragma once
// The committee model through the core contract (hdat/core/model.hpp): its parameters, its theory
// (CommitteeODE), its initial state, its finite system (OnlineSGD) and the harness settings read
// from the parameters. register.cpp turns it into the model's commands (curve, simulate, validate).
#include <memory>

#include "hdat/core/model.hpp"
#include "hdat/core/params.hpp"
#include "hdat/core/table.hpp"

namespace hdat::committee {

/// Every key: the model's own (declare_model_keys) and the harness's shared ones with this
/// model's defaults (t_max 300, n_points 120, seeds 8, dims 500/1000/2000, size key N).
const ParamSet& parameters();

/// The declaration (one object, shared by every command).
std::shared_ptr<const DynamicsModel> dynamics_model();

/// The time a run (or the theory) leaves the plateau: the first observed time at which some
/// student's normalised overlaps with the teachers, r_in = R_in / √(Q_ii T_nn), spread by more than
/// `threshold` (max_n r_in − min_n r_in). NaN when it never does (or M = 1).
double escape_time(const Table& run, int K, int M, double threshold);

}  // namespace hdat::committee
