// The settings of `hdat geometry` (one ParamSet: --set errors name the key, exit code 2).
#include "hdat/geometry/analysis.hpp"

namespace hdat::geometry {

const ParamSet& analysis_params() {
  static const ParamSet set = [] {
    ParamSet p;
    // Documents (checkpoint only).
    p.integer("documents", 32, "sequences sampled from the model (the analysis' documents)", Range::between(1, 100000));
    p.integer("tokens", 256, "tokens per document including the leading BOS (<= the model's context)", Range::between(2, 1 << 20));
    p.real("temperature", 1.0, "sampling temperature of the documents (0: greedy)", Range::nonnegative());
    p.integer("seed", 1, "seed of every random stream (documents, random sets, bootstrap, random orders)", Range::between(0, 9.0e15));
    p.choice("precision", "double", {"double", "float"}, "arithmetic of the forward pass (distances are always double)");
    // Which queries (checkpoint only; --maps uses the maps given).
    p.integer("queries.stride", 16, "evaluate every stride-th query position (and always the final one)", Range::between(1, 1 << 20));
    p.integer("queries.dense_until", 16, "also evaluate every query 1..dense_until-1 (the early, BOS-dominated ones)", Range::between(0, 1 << 20));
    p.int_list("queries.bins", nlohmann::json::array({1, 4, 16, 64, 128}),
               "left edges of the query-position bins of the summaries (README's table: 1-3, 4-15, 16-63, 64-127, 128-)",
               Range::nonnegative());
    // Metrics.
    p.integer("n_max", 256, "largest N of the grid 1, 2, 4, ..., n_max (capped by the context: N < visible sources)", Range::between(1, 1 << 20));
    p.integer("random_repeats", 16, "random nested sets per (head, query) for the baseline", Range::between(0, 100000));
    p.choice("ranking", "attention", {"attention", "contribution"}, "top-N by α_i, or by |α_i v_i|");
    p.integer("sink", 0, "the sink's source index (BOS = 0); a map's own \"sink\" overrides it", Range::between(0, 1 << 20));
    // Taxonomy.
    p.choice("taxonomy.tie", "earlier", {"earlier", "later"}, "which source wins among equal scores α_j |v_j|");
    p.real("taxonomy.winner_margin", 0.0, "a query is Reset unless its winner's score exceeds the runner-up's by this relative margin",
           Range::nonnegative());
    p.real("taxonomy.min_share", 0.0, "a head's plurality label needs at least this share of its queries, else Reset (0.5: majority)",
           Range::between(0, 1));
    // Uncertainty.
    p.integer("bootstrap", 1000, "bootstrap resamples of the documents", Range::between(0, 1000000));
    p.real("confidence", 0.95, "level of the percentile bootstrap intervals", Range::open_between(0, 1));
    // Head sparsification (checkpoint only).
    p.boolean("sparsify.enabled", true, "run head sparsification on held-out sequences");
    p.integer("sparsify.documents", 8, "held-out sequences (sampled with another stream) for the loss", Range::between(1, 100000));
    p.integer("sparsify.step", 4, "heads removed between two measurements", Range::between(1, 1 << 20));
    p.integer("sparsify.random_orders", 4, "random removal orders (baseline)", Range::between(0, 10000));
    p.text("sparsify.order", "mixer,reset,retriever", "taxonomy removal order: the classes removed first, then the next");
    p.real("sparsify.break_delta", 0.5, "a single head 'breaks' the model if removing it alone raises the NLL by more (nats/token)",
           Range::positive());
    // Output.
    p.integer("export_maps", 0, "write the maps of this many documents to maps.json (the --maps format)", Range::between(0, 100000));
    p.boolean("plots", true, "draw the figures (needs gnuplot)");
    return p;
  }();
  return set;
}

}  // namespace hdat::geometry
