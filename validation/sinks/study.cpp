#include "hdat/sinks/study.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <array>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/constants.hpp"

namespace hdat::sinks {

namespace {
using json = nlohmann::json;

double number_or_nan(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : kNaN;
}

// Mean and sample standard deviation of the finite entries (NaN when there are none; sd 0 for one).
std::pair<double, double> mean_sd(const std::vector<double>& xs) {
  double s = 0;
  int n = 0;
  for (double x : xs)
    if (std::isfinite(x)) {
      s += x;
      ++n;
    }
  if (n == 0) return {kNaN, kNaN};
  const double m = s / n;
  double v = 0;
  for (double x : xs)
    if (std::isfinite(x)) v += (x - m) * (x - m);
  return {m, n > 1 ? std::sqrt(v / (n - 1)) : 0.0};
}
}  // namespace

Table study_table(const std::vector<json>& records) {
  struct Group {
    std::vector<double> accuracy, sparsity, flip, share_above, score_above;
    int models = 0, above = 0, sink_heads = 0, heads_above = 0;
  };
  std::map<std::tuple<std::string, std::string, int>, Group> groups;
  for (const auto& r : records) {
    Group& g = groups[{r.value("task", "?"), r.value("attention", "?"), r.value("heads", 0)}];
    ++g.models;
    g.accuracy.push_back(number_or_nan(r, "accuracy"));
    g.sparsity.push_back(number_or_nan(r, "sparsity_mean"));
    g.flip.push_back(number_or_nan(r, "flip_rate_mean"));
    if (r.value("above_accuracy_threshold", false)) {
      ++g.above;
      const double share = number_or_nan(r, "sink_share");
      g.share_above.push_back(share);
      g.score_above.push_back(number_or_nan(r, "sink_score_mean"));
      const int H = r.value("heads", 0);
      g.heads_above += H;
      if (std::isfinite(share)) g.sink_heads += int(std::lround(share * H));
    }
  }
  Table t({"task", "attention", "heads", "models", "models_above", "sink_share", "sink_share_sd", "sink_score",
           "sink_score_sd", "accuracy",
           "accuracy_sd", "sparsity", "sparsity_sd", "flip_rate", "flip_rate_sd"});
  for (const auto& [key, g] : groups) {
    const auto [task, attention, heads] = key;
    const double pooled = g.heads_above > 0 ? double(g.sink_heads) / g.heads_above : kNaN;
    const auto share = mean_sd(g.share_above), score = mean_sd(g.score_above);
    const auto acc = mean_sd(g.accuracy), sp = mean_sd(g.sparsity), fl = mean_sd(g.flip);
    t.add_row(std::vector<Cell>{task, attention, double(heads), double(g.models), double(g.above), pooled,
                                g.above ? share.second : kNaN, score.first, score.second, acc.first, acc.second, sp.first, sp.second, fl.first,
                                fl.second});
  }
  return t;
}

Table runs_table(const std::vector<json>& records, const std::vector<std::string>& folders) {
  Table t({"folder", "task", "attention", "heads", "seed", "accuracy", "sink_share", "sink_score", "sparsity",
           "flip_rate"});
  for (std::size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    t.add_row(std::vector<Cell>{i < folders.size() ? folders[i] : std::string(), r.value("task", "?"),
                                r.value("attention", "?"), double(r.value("heads", 0)),
                                number_or_nan(r, "seed"), number_or_nan(r, "accuracy"), number_or_nan(r, "sink_share"),
                                number_or_nan(r, "sink_score_mean"),
                                number_or_nan(r, "sparsity_mean"), number_or_nan(r, "flip_rate_mean")});
  }
  return t;
}

AuthorsName authors_name(const std::string& kind) {
  static const std::map<std::string, AuthorsName> names = {
      {"softmax", {"softmax", "softmax", true}},
      {"sigmoid_norm", {"sigmoid_norm", "sigmoid", true}},
      {"sigmoid_unnorm", {"sigmoid_unnorm", "sigmoid", false}},
      {"elu_norm", {"coupled_linear_norm", "elu", true}},
      {"coupled_linear_norm", {"coupled_linear_norm", "elu", true}},
      {"elu_unnorm", {"coupled_linear_unnorm", "elu", false}},
      {"coupled_linear_unnorm", {"coupled_linear_unnorm", "elu", false}},
      {"linear_norm", {"linear", "elu·elu", true}},
      {"linear_unnorm", {"linear_unnorm", "elu·elu", false}},
      {"raw_dotproduct_norm", {"raw_dotproduct_norm", "linear", true}},
      {"raw_dotproduct_unnorm", {"raw_dotproduct_unnorm", "linear", false}},
      {"uniform", {"uniform", "", true}},
  };
  const auto it = names.find(kind);
  return it == names.end() ? AuthorsName{"", "", kind.find("_unnorm") == std::string::npos} : it->second;
}

std::vector<std::string> protocol_kinds() {
  return {"softmax",       "sigmoid_norm",  "sigmoid_unnorm",      "elu_norm",
          "elu_unnorm",    "linear_norm",   "linear_unnorm",       "raw_dotproduct_norm",
          "raw_dotproduct_unnorm"};
}

Table protocol_table(const Table& sweep, double accuracy_threshold) {
  for (const char* c : {"attention", "heads", "status", "accuracy", "sink_heads"})
    if (!sweep.has_column(c)) throw std::invalid_argument(fmt::format("protocol table: sweep table has no column '{}'", c));
  struct Group {
    int runs = 0, above = 0, sink_heads = 0, heads = 0;
    std::vector<double> shares;
    std::map<int, std::pair<int, int>> by_heads;  // H -> (sink heads, heads) over the runs above
  };
  std::map<std::string, Group> groups;
  std::vector<std::string> order;  // first appearance
  std::set<int> head_counts;
  for (std::size_t i = 0; i < sweep.rows(); ++i) {
    if (sweep.text(i, "status") != "ok") continue;
    const std::string kind = sweep.text(i, "attention");
    if (!groups.count(kind)) order.push_back(kind);
    Group& g = groups[kind];
    ++g.runs;
    const int H = int(sweep.number(i, "heads"));
    head_counts.insert(H);
    const double acc = sweep.number(i, "accuracy");
    if (!(acc > accuracy_threshold)) continue;
    const int sinks = int(std::lround(sweep.number(i, "sink_heads")));
    ++g.above;
    g.sink_heads += sinks;
    g.heads += H;
    g.shares.push_back(double(sinks) / H);
    g.by_heads[H].first += sinks;
    g.by_heads[H].second += H;
  }
  std::vector<std::string> cols = {"attention", "authors_code", "figure_label", "normalised", "runs", "runs_above",
                                   "sink_share_mean", "sink_share_se", "sink_share_pooled", "sink_heads", "heads"};
  for (int H : head_counts) cols.push_back(fmt::format("share_h{}", H));
  Table t(cols);
  // The figure's order first, then any other kind.
  std::vector<std::string> kinds;
  for (const auto& k : protocol_kinds())
    if (groups.count(k)) kinds.push_back(k);
  for (const auto& k : order)
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  for (const auto& k : kinds) {
    const Group& g = groups.at(k);
    const auto [mean, sd] = mean_sd(g.shares);
    const AuthorsName a = authors_name(k);
    std::vector<Cell> row = {k, a.code, a.figure, a.normalised ? 1.0 : 0.0, double(g.runs), double(g.above), mean,
                             g.above > 1 ? sd / std::sqrt(double(g.above)) : kNaN,
                             g.heads ? double(g.sink_heads) / g.heads : kNaN, double(g.sink_heads), double(g.heads)};
    for (int H : head_counts) {
      const auto it = g.by_heads.find(H);
      row.push_back(it == g.by_heads.end() ? kNaN : double(it->second.first) / it->second.second);
    }
    t.add_row(row);
  }
  return t;
}

void plot_protocol(const Table& t, const std::filesystem::path& stem) {
  // One x position per figure label (softmax, sigmoid, elu, elu·elu, linear), the normalised kind a
  // little left of it and the unnormalised one a little right, as the paper's paired bars.
  std::vector<std::string> labels;
  plot::Series norm{"with normalisation", {}, {}, {}, plot::Style::errorbars, 0};
  plot::Series unnorm{"without normalisation", {}, {}, {}, plot::Style::errorbars, 1};
  std::string ticks;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::string label = t.text(i, "figure_label").empty() ? t.text(i, "attention") : t.text(i, "figure_label");
    auto it = std::find(labels.begin(), labels.end(), label);
    if (it == labels.end()) it = labels.insert(labels.end(), label);
    const double x = double(it - labels.begin()) + 1;
    const bool normalised = t.number(i, "normalised") != 0;
    plot::Series& s = normalised ? norm : unnorm;
    s.x.push_back(x + (normalised ? -0.12 : 0.12));
    s.y.push_back(t.number(i, "sink_share_mean"));
    const double se = t.number(i, "sink_share_se");
    s.yerr.push_back(std::isfinite(se) ? se : 0.0);
  }
  for (std::size_t i = 0; i < labels.size(); ++i) ticks += fmt::format("{}{}", i ? ", " : "", labels[i]);
  plot::Figure fig;
  fig.title = "share of sink heads in layer 2, runs above the accuracy threshold (mean +- s.e. over runs)";
  fig.columns = 1;
  plot::Panel p{"", "attention kind, left to right: " + ticks, "share of sink heads", false, false, {}, {},
                std::pair<double, double>{0.5, double(labels.size()) + 0.5}, std::pair<double, double>{-0.02, 1.05}};
  p.series = {norm, unnorm};
  p.legend = "top right";
  fig.panels = {p};
  fig.panel_width = 720;
  plot::render(fig, stem);
}

namespace {

void plot_study(const std::filesystem::path& dir) {
  const Table t = Table::read_csv_file((dir / "study.csv").string());
  plot::Figure fig;
  fig.title = "attention sinks per attention kind (mean +- sd over seeds)";
  fig.columns = 2;
  plot::Panel share{"share of sink heads, last layer (models above accuracy threshold)", "heads", "share", false, false,
                    {}, {}, std::nullopt, std::pair<double, double>{-0.05, 1.05}};
  plot::Panel score{"mean sink score, last layer (same models)", "heads", "sink score", false, false, {}, {},
                    std::nullopt, std::pair<double, double>{-0.05, 1.05}};
  plot::Panel acc{"accuracy", "heads", "accuracy", false, false, {}, {}, std::nullopt,
                  std::pair<double, double>{0, 1.05}};
  plot::Panel sp{"sparsity (mean largest share of a row)", "heads", "sparsity", false, false, {}, {}, std::nullopt,
                 std::pair<double, double>{0, 1.05}};
  std::map<std::string, std::array<plot::Series, 4>> by_kind;
  bool one_heads = true;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    one_heads = one_heads && t.number(i, "heads") == t.number(0, "heads");
    by_kind[t.text(i, "task") + " " + t.text(i, "attention")];  // fixes the order (and index) of the kinds
  }
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::string label = t.text(i, "task") + " " + t.text(i, "attention");
    auto& s = by_kind[label];
    for (auto& x : s) {
      x.label = label;
      x.style = plot::Style::errorbars;
    }
    // One head count: the kinds side by side (x = their index); several: against the number of heads,
    // each kind offset a little so that the error bars do not overlap.
    const double index = double(std::distance(by_kind.begin(), by_kind.find(label)));
    const double x = one_heads ? index + 1 : t.number(i, "heads") * (1.0 + 0.03 * index);
    const double cols[4][2] = {{t.number(i, "sink_share"), t.number(i, "sink_share_sd")},
                               {t.number(i, "sink_score"), t.number(i, "sink_score_sd")},
                               {t.number(i, "accuracy"), t.number(i, "accuracy_sd")},
                               {t.number(i, "sparsity"), t.number(i, "sparsity_sd")}};
    for (int k = 0; k < 4; ++k) {
      s[k].x.push_back(x);
      s[k].y.push_back(cols[k][0]);
      s[k].yerr.push_back(std::isfinite(cols[k][1]) ? cols[k][1] : 0.0);
    }
  }
  for (auto& [label, s] : by_kind) {
    share.series.push_back(s[0]);
    score.series.push_back(s[1]);
    acc.series.push_back(s[2]);
    sp.series.push_back(s[3]);
  }
  acc.hlines.push_back({0.95, "accuracy threshold"});
  for (plot::Panel* p : {&share, &score, &acc, &sp}) {
    if (one_heads) {
      p->xlabel = fmt::format("attention kind (legend), {} heads", t.rows() ? t.number(0, "heads") : 0.0);
      p->xrange = std::pair<double, double>{0.0, 2.0 * double(by_kind.size()) + 1.0};  // room for the legend
    }
  }
  score.hlines.push_back({0.9, "sink threshold"});
  fig.panels = {share, score, acc, sp};
  plot::render(fig, dir / "sink_share");
}

void plot_run(const std::filesystem::path& dir) {
  const json run = json::parse(read_file(dir / "run.json"));
  const json cfg = run.value("config", json::object());
  const std::string what = fmt::format("{} / {}", cfg.value("task", "?"), cfg.value("attention", "?"));
  if (std::filesystem::exists(dir / "sim.csv")) {
    const Table c = Table::read_csv_file((dir / "sim.csv").string());
    plot::Figure fig;
    fig.title = "training: " + what;
    plot::Panel loss{"loss", "step", "cross-entropy", false, true, {}, {}, std::nullopt, std::nullopt};
    plot::Panel acc{"accuracy (evaluation set)", "step", "accuracy", false, false, {}, {}, std::nullopt,
                    std::pair<double, double>{0, 1.02}};
    loss.series.push_back({"train", c.numbers("step"), c.numbers("train_loss"), {}, plot::Style::linespoints, 0});
    loss.series.push_back({"evaluation", c.numbers("step"), c.numbers("eval_loss"), {}, plot::Style::linespoints, 1});
    acc.series.push_back({"accuracy", c.numbers("step"), c.numbers("accuracy"), {}, plot::Style::linespoints, 2});
    fig.panels = {loss, acc};
    plot::render(fig, dir / "training");
  }
  if (!std::filesystem::exists(dir / "sink_heads.csv")) return;
  const Table h = Table::read_csv_file((dir / "sink_heads.csv").string());
  int layers = 0, heads = 0;
  for (std::size_t i = 0; i < h.rows(); ++i) {
    layers = std::max(layers, int(h.number(i, "layer")) + 1);
    heads = std::max(heads, int(h.number(i, "head")) + 1);
  }
  plot::Figure fig;
  fig.title = "heads: " + what;
  plot::Panel sink{"sink score (mass on BOS, rows 1..L-3)", "head", "sink score", false, false, {}, {},
                   std::pair<double, double>{-0.5, heads - 0.5}, std::pair<double, double>{0, 1.02}};
  plot::Panel sp{"sparsity", "head", "mean largest share", false, false, {}, {},
                 std::pair<double, double>{-0.5, heads - 0.5}, std::pair<double, double>{0, 1.02}};
  for (int l = 0; l < layers; ++l) {
    plot::Series a{fmt::format("layer {}", l + 1), {}, {}, {}, plot::Style::linespoints, l};
    plot::Series b = a;
    for (std::size_t i = 0; i < h.rows(); ++i)
      if (int(h.number(i, "layer")) == l) {
        a.x.push_back(h.number(i, "head"));
        a.y.push_back(h.number(i, "sink_score"));
        b.x.push_back(h.number(i, "head"));
        b.y.push_back(h.number(i, "sparsity"));
      }
    sink.series.push_back(a);
    sp.series.push_back(b);
  }
  sink.hlines.push_back({cfg.value("sink_threshold", 0.9), "sink threshold"});
  fig.panels = {sink, sp};
  plot::render(fig, dir / "heads");

  if (!std::filesystem::exists(dir / "attention.csv")) return;
  const Table a = Table::read_csv_file((dir / "attention.csv").string());
  int L = 0;
  for (std::size_t i = 0; i < a.rows(); ++i) L = std::max(L, int(a.number(i, "query")) + 1);
  for (int hd = 0; hd < heads; ++hd) {
    plot::Heatmap hm;
    hm.title = fmt::format("{}: layer {} head {}, mean attention", what, layers, hd);
    hm.xlabel = "key position";
    hm.ylabel = "query position";
    hm.zlabel = "weight";
    // Two grid nodes per cell (its edges, less a sliver) so that the surface colours every cell with
    // its own weight instead of blending neighbouring cells at the corners.
    for (int i = 0; i < L; ++i)
      for (double edge : {i - 0.5, i + 0.499}) {
        hm.x.push_back(edge);
        hm.y.push_back(edge);
      }
    hm.z = Eigen::MatrixXd::Constant(2 * L, 2 * L, kNaN);
    for (std::size_t i = 0; i < a.rows(); ++i)
      if (int(a.number(i, "layer")) == layers - 1 && int(a.number(i, "head")) == hd) {
        const int key = int(a.number(i, "key")), query = int(a.number(i, "query"));
        hm.z.block(2 * key, 2 * query, 2, 2).setConstant(a.number(i, "weight"));
      }
    plot::Figure f;
    f.heatmap = hm;
    f.panel_width = 480;
    plot::render(f, dir / fmt::format("attention_layer{}_head{}", layers, hd));
  }
}

}  // namespace

void plot_sinks_folder(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir / "study.csv"))
    plot_study(dir);
  else
    plot_run(dir);
}

}  // namespace hdat::sinks
