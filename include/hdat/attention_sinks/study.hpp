#pragma once
// Pooling runs of the `sinks` model (one output folder per seed × attention kind × heads) into the
// statistics of the spec: the share of sink heads in the last layer among the models above the
// accuracy threshold, with its spread over seeds; and the figures of single runs and of a study.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/table.hpp"

namespace hdat::sinks {

/// One row per (task, attention, heads): models, models above the accuracy threshold, the pooled
/// share of sink heads of those models (sink heads / heads) and the standard deviation of the
/// per-model share over them, and means ± standard deviations of accuracy, sparsity and flip rate
/// over all models of the group. `records` are sinks.json contents.
Table study_table(const std::vector<nlohmann::json>& records);
/// One row per run: folder, task, attention, heads, seed, accuracy, sink_share, sparsity, flip rate.
Table runs_table(const std::vector<nlohmann::json>& records, const std::vector<std::string>& folders);

/// Figures of an output folder of the `sinks` model: for a run, the training curve, the sink score of
/// every head and the mean attention maps of the last layer; for a study (study.csv), the share of
/// sink heads, accuracy and sparsity per attention kind against the number of heads.
void plot_sinks_folder(const std::filesystem::path& dir);

}  // namespace hdat::sinks
