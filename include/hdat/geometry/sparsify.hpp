#pragma once
// Head sparsification (spec: geometry.md, "Head sparsification"): remove heads (zero their output
// before W_o) in the order of a ranking and measure the increase of the held-out negative
// log-likelihood against the fraction removed. Rankings: the taxonomy (classes in a given order,
// within a class the most typical member first), the mean norm of the head's write into the
// residual stream (smallest first), the mean attention entropy (most diffuse first), random orders.
// Also every head alone: those whose removal alone raises the loss by more than a threshold
// "break" the model.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/geometry/engine.hpp"
#include "hdat/llama/transformer.hpp"

namespace hdat::geometry::detail {

struct HeadScores {
  int layers = 0, heads = 0;
  std::vector<HeadLabel> labels;    // layer-major
  std::vector<double> write_norm;   // mean |W_o,h o_h(t)| over documents and positions
  std::vector<double> entropy;      // mean −Σ α log α over documents and queries t ≥ 1
};

/// Removal order of the heads (indices layer * heads + head) for a ranking name:
/// "taxonomy", "write_norm", "entropy" (random orders are drawn by the caller).
std::vector<int> removal_order(const std::string& ranking, const HeadScores& scores, const std::vector<Role>& class_order);
/// Parse "mixer,reset,retriever" (a permutation of the three roles) or throw InputError(key).
std::vector<Role> parse_class_order(const std::string& text, const std::string& key);

struct SparsifyOutput {
  Table curve;   // sparsify.csv
  Table single;  // single_heads.csv
  nlohmann::json info;
};

template <class Scalar>
SparsifyOutput sparsify(const llama::Transformer<Scalar>& model, const HeadScores& scores, const Params& params,
                        const Settings& settings, int tokens);

}  // namespace hdat::geometry::detail
