#pragma once
// The committee model through the core contract (hdat/core/model.hpp): its parameters, its theory
// (CommitteeODE), its initial state, its finite system (OnlineSGD) and the harness settings read
// from the parameters. register.cpp turns it into the model's commands (curve, simulate, validate).
#include <memory>

#include "hdat/core/model.hpp"
#include "hdat/committee/model.hpp"
#include "hdat/core/params.hpp"
#include "hdat/core/table.hpp"

namespace hdat::committee {

/// Every key: the model's own (declare_model_keys) and the harness's shared ones with this
/// model's defaults (t_max 1000, n_points 120, seeds 8, dims 500/1000/2000, size key N).
const ParamSet& parameters();

/// The declaration (one object, shared by every command).
std::shared_ptr<const DynamicsModel> dynamics_model();

/// The plateau escape as an event (named "escape_time"): g = max_i (max_n r_in − min_n r_in) −
/// threshold with r_in = R_in / √(Q_ii T_nn), the spread of some student's normalised overlaps with
/// the teachers passing `threshold` upwards. The theory locates it between steps, a simulation
/// between its observations (hdat::sampled_event_time).
EventFunction escape_event(const Config& s, double threshold);

}  // namespace hdat::committee
