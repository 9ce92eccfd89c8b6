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

namespace hdat::polarization {

/// The declaration (one object, shared by every command).
std::shared_ptr<const DynamicsModel> dynamics_model();

/// The model's own additions to the core's commands: the instance, the asymptotics and events of a
/// curve; the gradient-descent run of a simulation; for validate, the identities of every step and
/// the drift check, which overrule the verdict when they fail, and the gap against the step.
void finish_command(const Params& p, const std::string& command, RunOutput& out);

/// The gap of every block against the step, from validate's record: lr, gap_BLOCK, order_BLOCK
/// (log(gap(η)/gap(η/2)) / log 2; NaN at the largest step).
Table convergence_table(const nlohmann::json& validation);

}  // namespace hdat::polarization
