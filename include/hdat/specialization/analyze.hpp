#pragma once
// `hdat analyze specialization`: linear stability of the unspecialized phase and its predictions
// (order of the features, escape time against log D), compared with online SGD.
#include "hdat/core/registry.hpp"

namespace hdat::specialization {

RunOutput analyze_command(const Params& p, RunContext& ctx);

}  // namespace hdat::specialization
