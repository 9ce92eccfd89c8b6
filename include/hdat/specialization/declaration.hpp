#pragma once
// The specialization model through the core contract (hdat/core/model.hpp): its theory
// (OrderParameterFlow), its finite system (OnlineSGD), and the settings of the harness, read from
// the model's parameters. register.cpp turns it into the model's commands.
#include <memory>

#include "hdat/core/model.hpp"

namespace hdat::specialization {

/// The declaration (one object, shared by every command).
std::shared_ptr<const DynamicsModel> dynamics_model();


}  // namespace hdat::specialization
