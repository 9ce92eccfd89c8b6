#pragma once
// The polarization model through the core contract (hdat/core/model.hpp): its theory (FlowTheory:
// the flow with its events), its finite system (GradientDescent at step lr, t = lr · steps), and the
// settings of the harness, read from the model's parameters. Gradient descent is deterministic and
// the explicit Euler scheme of the flow: one run per step size (no standard errors), validate runs
// lr, lr/2, ..., lr/2^halvings and expects the gap to shrink like lr (order 1). register.cpp turns it
// into the model's commands.
#include <memory>
#include <string>

#include "hdat/core/model.hpp"
#include "hdat/core/table.hpp"
#include "hdat/polarization/model.hpp"

namespace hdat::polarization {

/// The declaration (one object, shared by every command).
std::shared_ptr<const DynamicsModel> dynamics_model();

/// The Config the model was bound with when these parameters were resolved (the entry's check
/// attaches the binding): a command's own steps (figures, the step check, analyze) use it instead of
/// parsing again. Parsed here only for parameters that carry no binding (a direct library call).
Config bound_config(const Params& p);

/// The gap of every block against the step, from validate's comparison: lr, gap_BLOCK, order_BLOCK
/// (log(gap(η)/gap(η/2)) / log 2; NaN at the largest step).
Table convergence_table(const TrajectoryValidation& validation);

}  // namespace hdat::polarization
