// The two entry points of `hdat geometry`: a pretrained checkpoint (documents sampled from the
// model, maps captured from the forward pass) and user-supplied maps.
#include "hdat/geometry/analysis.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <ctime>
#include <cmath>
#include <set>

#include "hdat/geometry/engine.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/llama/sampling.hpp"
#include "hdat/geometry/sparsify.hpp"

namespace hdat::geometry {

using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
// CPU time of the calling thread: the per-document phases are timed with it, so that the report
// says where the work goes even when the machine is shared.
double process_cpu() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }
double thread_cpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// The evaluated query positions of a document of T tokens: 1..dense_until−1, every stride-th, T−1.
std::vector<int> evaluated_queries(int T, int stride, int dense_until) {
  std::set<int> q;
  for (int t = 1; t < std::min(dense_until, T); ++t) q.insert(t);
  for (int t = stride; t < T; t += stride) q.insert(t);
  q.insert(T - 1);
  return {q.begin(), q.end()};
}

// What one document leaves behind, merged in document order.
struct DocumentResult {
  std::vector<int> tokens;
  double nll = 0;  // mean NLL per token at temperature 1
  std::unique_ptr<UnitAccumulator> acc;
  Eigen::MatrixXd mass;           // [layer][bin] × (sink, previous, self, uniform, count)
  Eigen::MatrixXd write_norm;     // layers × heads: mean over positions
  Eigen::MatrixXd entropy;        // layers × heads: mean over queries t ≥ 1
  double sample_s = 0, forward_s = 0, metrics_s = 0, taxonomy_s = 0;
  std::vector<AttentionMap> exported;
};

}  // namespace

// The checkpoint path, step by step: plan, documents (sample, forward, measure), tables,
// sparsification, report.
namespace checkpoint_run {
namespace {

// What the run samples and measures, fixed before the first document.
struct Plan {
  int T = 0, docs = 0, n_export = 0;
  double temperature = 1;
  int layers = 0, heads = 0, bins = 0;
  std::vector<int> queries;  // the evaluated query positions
  Layout layout;
};

Plan checked_plan(const llama::Config& c, const Params& p, const Settings& s) {
  Plan plan;
  plan.T = static_cast<int>(p.integer("tokens"));
  plan.docs = static_cast<int>(p.integer("documents"));
  plan.temperature = p.real("temperature");
  plan.n_export = static_cast<int>(std::min<long>(p.integer("export_maps"), plan.docs));
  const int T = plan.T;
  if (T > c.seq_len) throw InputError("tokens", fmt::format("must be <= the model's context of {} (got {})", c.seq_len, T));
  if (s.sink >= T - 1) throw InputError("sink", fmt::format("must be a position before the last (< {})", T - 1));
  if (p.boolean("sparsify.enabled")) parse_class_order(p.text("sparsify.order"), "sparsify.order");  // fail before the work

  plan.layers = c.n_layers;
  plan.heads = c.n_heads;
  plan.queries = evaluated_queries(T, static_cast<int>(p.integer("queries.stride")), static_cast<int>(p.integer("queries.dense_until")));
  plan.layout.set_n_values(s.curve.n_max);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h)
      for (int q : plan.queries) plan.layout.add_slot(l, h, q);
  plan.layout.max_query = T - 1;
  plan.layout.finish(s.bin_edges);
  plan.bins = static_cast<int>(s.bin_edges.size());
  return plan;
}

AttentionMap exported_map(int l, int h, int q, const Eigen::MatrixXd& A, const Eigen::MatrixXd& V, int sink, int document) {
  AttentionMap am;
  am.layer = l;
  am.head = h;
  am.query = q;
  am.alpha = A.col(q).head(q + 1);
  am.values = V.leftCols(q + 1);
  am.sink = sink;
  am.document = document;
  return am;
}

// The geometry metrics of the evaluated queries of document d (and its maps, if exported).
void measure_maps(const llama::Capture& cap, const Plan& plan, const Settings& s, int d, DocumentResult& r) {
  r.acc = std::make_unique<UnitAccumulator>(plan.layout, s);
  for (int l = 0; l < plan.layers; ++l)
    for (int h = 0; h < plan.heads; ++h) {
      const Eigen::MatrixXd& A = cap.layers[l].alpha[h];
      const Eigen::MatrixXd& V = cap.layers[l].values[cap.kv_head[h]];
      for (int q : plan.queries) {
        const MapInput m{l, h, q, s.sink, A.col(q).head(q + 1), V.leftCols(q + 1), q == plan.T - 1,
                         static_cast<std::uint64_t>(plan.layout.slot(l, h, q))};
        r.acc->add_map(m, static_cast<std::uint64_t>(d));
        if (d < plan.n_export) r.exported.push_back(exported_map(l, h, q, A, V, s.sink, d));
      }
    }
}

// Entropy of the attention of query t over its sources 0..t.
double attention_entropy(const Eigen::MatrixXd& A, int t) {
  double H = 0;
  for (int i = 0; i <= t; ++i)
    if (A(i, t) > 0) H -= A(i, t) * std::log(A(i, t));
  return H;
}

// Taxonomy over every query (not only the evaluated ones: the label should not depend on the
// sampling of query positions), attention mass by bin, and the head scores for sparsification.
void measure_heads(const llama::Capture& cap, const Plan& plan, const Settings& s, DocumentResult& r) {
  const int T = plan.T;
  r.mass = Eigen::MatrixXd::Zero(plan.layers * plan.bins, 5);
  r.write_norm = Eigen::MatrixXd::Zero(plan.layers, plan.heads);
  r.entropy = Eigen::MatrixXd::Zero(plan.layers, plan.heads);
  for (int l = 0; l < plan.layers; ++l)
    for (int h = 0; h < plan.heads; ++h) {
      const Eigen::MatrixXd& A = cap.layers[l].alpha[h];
      const Eigen::MatrixXd& V = cap.layers[l].values[cap.kv_head[h]];
      for (int t = 1; t < T; ++t) {
        if (t != s.sink) {
          int winner = -1;
          const Role role = classify_query(A.col(t).head(t + 1), V.leftCols(t + 1), s.taxonomy, &winner);
          r.acc->add_role(l, h, t, t == T - 1, role, winner == t - 1);
        }
        r.entropy(l, h) += attention_entropy(A, t) / (T - 1);
        const int b = plan.layout.group_of_bin(t) - 1;
        if (b >= 0) {
          auto row = r.mass.row(l * plan.bins + b);
          row(0) += A(s.sink, t);
          row(1) += A(t - 1, t);
          row(2) += A(t, t);
          row(3) += 1.0 / (t + 1);
          row(4) += 1;
        }
      }
      r.write_norm(l, h) = cap.layers[l].head_write_norm.row(h).mean();
    }
}

template <class Scalar>
DocumentResult process_document(const llama::Transformer<Scalar>& model, const Plan& plan, const Settings& s, int d) {
  DocumentResult r;
  double t0 = thread_cpu();
  rng::Engine e = rng::engine(s.seed, d, kSampleStream);
  llama::Sample smp = llama::sample(model, plan.T, plan.temperature, e);
  r.tokens = smp.tokens;
  r.nll = smp.nll.mean();
  r.sample_s = thread_cpu() - t0;
  t0 = thread_cpu();
  llama::Capture cap;
  model.forward(smp.tokens, &cap);
  r.forward_s = thread_cpu() - t0;
  t0 = thread_cpu();
  measure_maps(cap, plan, s, d, r);
  r.metrics_s = thread_cpu() - t0;
  t0 = thread_cpu();
  measure_heads(cap, plan, s, r);
  r.taxonomy_s = thread_cpu() - t0;
  return r;
}

// Every document merged, in document order.
struct Documents {
  Documents(const Plan& plan, const Settings& s)
      : agg(plan.layout, s), mass(Eigen::MatrixXd::Zero(plan.layers * plan.bins, 5)),
        write_norm(Eigen::MatrixXd::Zero(plan.layers, plan.heads)), entropy(write_norm) {}

  void add(DocumentResult& r, int docs, const llama::Vocabulary& vocab) {
    agg.add(*r.acc);
    mass += r.mass;
    write_norm += r.write_norm / docs;
    entropy += r.entropy / docs;
    nlls.push_back(r.nll);
    sample_s += r.sample_s;
    forward_s += r.forward_s;
    metrics_s += r.metrics_s;
    taxonomy_s += r.taxonomy_s;
    text += fmt::format("=== document {} (NLL {:.4f} nats/token) ===\n{}\n\n", nlls.size() - 1, r.nll, vocab.decode(r.tokens));
    for (auto& m : r.exported) exported.push_back(std::move(m));
  }

  Aggregate agg;
  Eigen::MatrixXd mass;  // [layer][bin] × (sink, previous, self, uniform, count), summed
  Eigen::MatrixXd write_norm, entropy;  // layers × heads, means over documents
  std::vector<double> nlls;
  std::string text;  // documents.txt
  std::vector<AttentionMap> exported;
  double sample_s = 0, forward_s = 0, metrics_s = 0, taxonomy_s = 0, wall_s = 0;
};

// Documents in chunks: computed in parallel, merged in document order (thread-count independent).
template <class Scalar>
void run_documents(const llama::Transformer<Scalar>& model, const Plan& plan, const Settings& s, const llama::Vocabulary& vocab,
                   Documents& all) {
  Progress progress("geometry", plan.docs, !s.quiet);
  const auto t_docs = Clock::now();
  const int chunk = std::max(1, 2 * s.threads);
  for (int first = 0; first < plan.docs && !interrupted(); first += chunk) {
    const int last = std::min(plan.docs, first + chunk);
    std::vector<DocumentResult> results(last - first);
#pragma omp parallel for schedule(dynamic) num_threads(s.threads)
    for (int d = first; d < last; ++d) {
      results[d - first] = process_document(model, plan, s, d);
      progress.advance();
    }
    for (auto& r : results) all.add(r, plan.docs, vocab);
  }
  progress.finish();
  if (interrupted()) throw Interrupted("interrupted: no output written");
  all.wall_s = since(t_docs);
}

Table attention_mass_table(const Documents& all, const Plan& plan) {
  Table mt({"layer", "queries", "sink", "previous", "self", "uniform", "queries_counted"});
  for (int l = 0; l < plan.layers; ++l)
    for (int b = 0; b < plan.bins; ++b) {
      const auto row = all.mass.row(l * plan.bins + b);
      if (row(4) == 0) continue;
      mt.add_row({double(l), plan.layout.groups[1 + b], row(0) / row(4), row(1) / row(4), row(2) / row(4), row(3) / row(4), row(4)});
    }
  return mt;
}

void add_tables(RunOutput& out, const Documents& all, const Plan& plan) {
  out.tables["geometry.csv"] = all.agg.geometry_table();
  out.tables["summary.csv"] = all.agg.summary_table();
  out.tables["sink_effect.csv"] = all.agg.sink_effect_table();
  out.tables["heads.csv"] = all.agg.heads_table();
  out.tables["taxonomy.csv"] = all.agg.taxonomy_table();
  out.tables["attention_mass.csv"] = attention_mass_table(all, plan);
  out.files["documents.txt"] = all.text;
  if (!all.exported.empty()) out.files["maps.json"] = maps_to_json(all.exported).dump() + "\n";
}

struct Timing {
  double wall = 0, cpu = 0;
};

// Head sparsification on held-out documents, the heads ranked by the scores measured here.
template <class Scalar>
nlohmann::json add_sparsification(RunOutput& out, const llama::Transformer<Scalar>& model, const Documents& all, const Plan& plan,
                                  const Params& p, const Settings& s, Timing& timing) {
  const auto t0 = Clock::now();
  const double c0 = process_cpu();
  HeadScores scores;
  scores.layers = plan.layers;
  scores.heads = plan.heads;
  scores.labels = all.agg.labels();
  for (int l = 0; l < plan.layers; ++l)
    for (int h = 0; h < plan.heads; ++h) {
      scores.write_norm.push_back(all.write_norm(l, h));
      scores.entropy.push_back(all.entropy(l, h));
    }
  SparsifyOutput sp = sparsify(model, scores, p, s, plan.T);
  out.tables["sparsify.csv"] = std::move(sp.curve);
  out.tables["single_heads.csv"] = std::move(sp.single);
  timing.wall = since(t0);
  timing.cpu = process_cpu() - c0;
  return std::move(sp.info);
}

struct MeanSd {
  double mean = 0, var = 0;
};

MeanSd nll_statistics(const std::vector<double>& nlls) {
  MeanSd m;
  for (double x : nlls) m.mean += x / nlls.size();
  for (double x : nlls) m.var += (x - m.mean) * (x - m.mean) / std::max<std::size_t>(1, nlls.size() - 1);
  return m;
}

void add_info(RunOutput& out, const llama::Checkpoint& ck, const Plan& plan, const Settings& s, const Documents& all) {
  const llama::Config& c = ck.config;
  const MeanSd nll = nll_statistics(all.nlls);
  out.info["source"] = "checkpoint";
  out.info["model_file"] = ck.path.string();
  out.info["checkpoint"] = {{"bytes", ck.file_bytes}, {"dim", c.dim}, {"hidden_dim", c.hidden_dim}, {"n_layers", c.n_layers},
                       {"n_heads", c.n_heads}, {"n_kv_heads", c.n_kv_heads}, {"vocab_size", c.vocab_size}, {"seq_len", c.seq_len}};
  out.info["sample_nll"] = nll.mean;
  out.info["sample_nll_sd"] = std::sqrt(nll.var);
  out.info["sample_nll_se"] = std::sqrt(nll.var / all.nlls.size());
  out.info["documents"] = plan.docs;
  out.info["evaluated_queries"] = plan.queries;
  out.info["n_values"] = plan.layout.n_values;
  out.info["query_groups"] = plan.layout.groups;
  out.info["bootstrap_unit"] = "document";
  out.info["threads"] = s.threads;
  out.info["headline"] = all.agg.headline();
}

std::string summary_line(const llama::Checkpoint& ck, const Plan& plan, const Documents& all, double seconds) {
  const MeanSd nll = nll_statistics(all.nlls);
  std::array<int, kRoles> count{};
  for (const auto& hl : all.agg.labels()) count[static_cast<int>(hl.label)]++;
  return fmt::format("geometry of {} ({} documents × {} tokens, sampled NLL {:.3f} ± {:.3f} nats/token): heads {} retriever, "
                     "{} mixer, {} reset; {:.1f} s",
                     ck.path.filename().string(), plan.docs, plan.T, nll.mean, std::sqrt(nll.var / all.nlls.size()), count[0],
                     count[1], count[2], seconds);
}

template <class Scalar>
RunOutput run_model(const llama::Checkpoint& ck, const llama::Vocabulary& vocab, const Params& p, RunContext& ctx) {
  const auto t_start = Clock::now();
  const double cpu_start = process_cpu();
  const Settings s = Settings::from(p, ctx);
  const Plan plan = checked_plan(ck.config, p, s);
  const llama::Transformer<Scalar> model(ck);
  Documents all(plan, s);
  run_documents(model, plan, s, vocab, all);

  RunOutput out;
  const auto t_tables = Clock::now();
  add_tables(out, all, plan);
  const double tables_s = since(t_tables);
  Timing sparsify_time;
  nlohmann::json sparsify_info;
  if (p.boolean("sparsify.enabled")) sparsify_info = add_sparsification(out, model, all, plan, p, s, sparsify_time);

  add_info(out, ck, plan, s, all);
  if (!sparsify_info.is_null()) out.info["sparsify"] = sparsify_info;
  // *_cpu: CPU seconds summed over threads; *_wall: elapsed.
  out.info["timing_seconds"] = {{"documents_wall", all.wall_s},
                                {"sampling_cpu", all.sample_s},
                                {"forward_capture_cpu", all.forward_s},
                                {"geometry_metrics_cpu", all.metrics_s},
                                {"taxonomy_mass_entropy_cpu", all.taxonomy_s},
                                {"aggregation_bootstrap_wall", tables_s},
                                {"sparsification_wall", sparsify_time.wall},
                                {"sparsification_cpu", sparsify_time.cpu},
                                {"total_wall", since(t_start)},
                                {"total_cpu", process_cpu() - cpu_start}};
  out.summary = summary_line(ck, plan, all, since(t_start));
  return out;
}

}  // namespace
}  // namespace checkpoint_run

RunOutput analyze_model(const std::filesystem::path& model_file, const Params& params, RunContext& ctx) {
  const llama::Checkpoint ck = llama::load_checkpoint(model_file, "--model-file");
  const llama::Vocabulary vocab = llama::Vocabulary::load(llama::Vocabulary::beside(model_file), ck.config.vocab_size, "--model-file");
  if (params.text("precision") == "float") return checkpoint_run::run_model<float>(ck, vocab, params, ctx);
  return checkpoint_run::run_model<double>(ck, vocab, params, ctx);
}

RunOutput analyze_maps(const std::vector<AttentionMap>& maps, const Params& params, RunContext& ctx) {
  const auto t_start = Clock::now();
  const Settings s = Settings::from(params, ctx);
  if (maps.empty()) throw InputError("--maps", "no maps to analyse");
  // Units: the maps' documents when given, else every map is its own unit.
  std::map<long, std::vector<int>> units;
  bool documents_given = true;
  for (std::size_t i = 0; i < maps.size(); ++i) documents_given = documents_given && maps[i].document >= 0;
  for (std::size_t i = 0; i < maps.size(); ++i) units[documents_given ? maps[i].document : static_cast<long>(i)].push_back(static_cast<int>(i));

  Layout layout;
  layout.set_n_values(s.curve.n_max);
  for (const auto& m : maps) layout.add_slot(m.layer, m.head, m.query);
  layout.finish(s.bin_edges);

  // The final query of a head within a unit is its largest query there.
  Aggregate agg(layout, s);
  std::vector<std::pair<long, std::vector<int>>> unit_list(units.begin(), units.end());
  const int U = static_cast<int>(unit_list.size());
  const int chunk = std::max(1, 8 * s.threads);
  long classified = 0;
  Progress progress("geometry", U, !s.quiet);
  for (int first = 0; first < U && !interrupted(); first += chunk) {
    const int last = std::min(U, first + chunk);
    std::vector<std::unique_ptr<UnitAccumulator>> acc(last - first);
#pragma omp parallel for schedule(dynamic) num_threads(s.threads) reduction(+ : classified)
    for (int u = first; u < last; ++u) {
      auto a = std::make_unique<UnitAccumulator>(layout, s);
      std::map<std::pair<int, int>, int> final_query;
      for (int i : unit_list[u].second) {
        auto& f = final_query[{maps[i].layer, maps[i].head}];
        f = std::max(f, maps[i].query);
      }
      for (int i : unit_list[u].second) {
        const AttentionMap& m = maps[i];
        const int sink = m.sink >= 0 ? m.sink : s.sink;
        const bool final = m.query == final_query[{m.layer, m.head}];
        // Random sets drawn from the stream of (document, slot), as on the checkpoint path: maps
        // exported by `export_maps` and read back give the same numbers.
        a->add_map(MapInput{m.layer, m.head, m.query, sink, m.alpha, m.values, final,
                            static_cast<std::uint64_t>(layout.slot(m.layer, m.head, m.query))},
                   static_cast<std::uint64_t>(unit_list[u].first));
        if (m.query != sink) {
          TaxonomyOptions o = s.taxonomy;
          o.sink = sink;
          int winner = -1;
          const Role role = classify_query(m.alpha, m.values, o, &winner);
          a->add_role(m.layer, m.head, m.query, final, role, winner == m.query - 1);
          ++classified;
        }
      }
      acc[u - first] = std::move(a);
      progress.advance();
    }
    for (auto& a : acc) agg.add(*a);
  }
  progress.finish();
  if (interrupted()) throw Interrupted("interrupted: no output written");

  RunOutput out;
  out.tables["geometry.csv"] = agg.geometry_table();
  out.tables["summary.csv"] = agg.summary_table();
  out.tables["sink_effect.csv"] = agg.sink_effect_table();
  out.tables["heads.csv"] = agg.heads_table();
  out.tables["taxonomy.csv"] = agg.taxonomy_table();
  long off_simplex = 0;
  for (const auto& m : maps) off_simplex += std::fabs(m.alpha.sum() - 1.0) > 1e-3;
  out.info["source"] = "maps";
  out.info["maps"] = maps.size();
  out.info["units"] = U;
  out.info["bootstrap_unit"] = documents_given ? "document" : "map";
  out.info["maps_alpha_sum_off_by_1e-3"] = off_simplex;
  out.info["classified_queries"] = classified;
  out.info["n_values"] = layout.n_values;
  out.info["query_groups"] = layout.groups;
  out.info["threads"] = s.threads;
  out.info["headline"] = agg.headline();
  out.info["timing_seconds"] = {{"total_wall", since(t_start)}};
  out.summary = fmt::format("geometry of {} maps ({} units{}){}", maps.size(), U, documents_given ? ", by document" : ", one per map",
                            off_simplex ? fmt::format("; note: {} maps have Σα off 1 by more than 1e-3", off_simplex) : "");
  return out;
}

}  // namespace hdat::geometry
