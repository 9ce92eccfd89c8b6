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

/// The authors' names of an hdat attention kind (tml-epfl/softmax): the name in their code
/// (src/attention.py) and the label of their figure (visualizations/induction.ipynb), with whether
/// the figure counts it as normalised. Empty strings for kinds the authors do not have.
struct AuthorsName {
  std::string code, figure;
  bool normalised = true;
};
AuthorsName authors_name(const std::string& kind);

/// The attention kinds of the paper's figure, in its order (softmax, sigmoid, elu, elu·elu, linear;
/// each normalised then not), by hdat name.
std::vector<std::string> protocol_kinds();

/// The paper's statistic from the table of a protocol sweep (sweep.csv with the columns attention,
/// heads, status, accuracy, sink_heads): per attention kind, the finished runs, those with accuracy
/// above the threshold, and over those the mean share of last-layer sink heads per run (the
/// figure's bar) with its standard error, the pooled share (sink heads / heads), and the share per
/// head count (columns share_h1, share_h2, ...). Kinds with no finished run are left out.
Table protocol_table(const Table& sweep, double accuracy_threshold);
/// The figure of a protocol table: the share of sink heads per kind, normalised and not side by side.
void plot_protocol(const Table& protocol, const std::filesystem::path& stem);

/// Figures of an output folder of the `sinks` model: for a run, the training curve, the sink score of
/// every head and the mean attention maps of the last layer; for a study (study.csv), the share of
/// sink heads, accuracy and sparsity per attention kind against the number of heads.
void plot_sinks_folder(const std::filesystem::path& dir);

}  // namespace hdat::sinks
