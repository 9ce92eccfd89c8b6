#pragma once
// `hdat analyze specialization`: linear stability of the unspecialized phase and its predictions
// (order of the features, escape time against log D), compared with online SGD (analysis=stability);
// or the activations compared at one setting (analysis=activations: claims 4 and 5).
#include "hdat/core/registry.hpp"

namespace hdat::specialization {

RunOutput analyze_command(const Params& p, RunContext& ctx);

/// analysis=activations (activations.cpp): the variants of `variants` (default: softmax; softmax1 mean and
/// sum with b = 0, sum with b = -3 and trained, mean with trained b; bayes) compared at one setting:
/// activations.csv (final risk against the Bayes risk, the risk with F heads kept), prune.csv,
/// gating.csv (each head's total weight on the sequences of each support point), curves.csv.
RunOutput compare_activations(const Params& p, RunContext& ctx);

}  // namespace hdat::specialization
