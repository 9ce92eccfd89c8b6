#include "hdat/geometry/sparsify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <numeric>
#include <sstream>

#include "hdat/core/error.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/llama/sampling.hpp"

namespace hdat::geometry::detail {

std::vector<Role> parse_class_order(const std::string& text, const std::string& key) {
  std::vector<Role> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    Role r;
    if (item == "retriever") r = Role::retriever;
    else if (item == "mixer") r = Role::mixer;
    else if (item == "reset") r = Role::reset;
    else throw InputError(key, fmt::format("unknown class '{}': give the three of retriever, mixer, reset in removal order", item));
    if (std::find(out.begin(), out.end(), r) != out.end()) throw InputError(key, fmt::format("class '{}' given twice", item));
    out.push_back(r);
  }
  if (out.size() != 3) throw InputError(key, "give all three classes in removal order, e.g. mixer,reset,retriever");
  return out;
}

std::vector<int> removal_order(const std::string& ranking, const HeadScores& s, const std::vector<Role>& class_order) {
  const int n = s.layers * s.heads;
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (ranking == "taxonomy") {
    auto priority = [&](int i) {
      return static_cast<int>(std::find(class_order.begin(), class_order.end(), s.labels[i].label) - class_order.begin());
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const int pa = priority(a), pb = priority(b);
      if (pa != pb) return pa < pb;
      // Within a class: the most typical member (largest share of its label) first.
      return s.labels[a].share[static_cast<int>(s.labels[a].label)] > s.labels[b].share[static_cast<int>(s.labels[b].label)];
    });
  } else if (ranking == "write_norm") {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s.write_norm[a] < s.write_norm[b]; });
  } else if (ranking == "entropy") {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s.entropy[a] > s.entropy[b]; });
  } else {
    throw std::logic_error("internal: unknown ranking " + ranking);
  }
  return order;
}

// The steps of sparsify: the held-out documents, the head sets to remove, one forward pass per
// (head set, document), then the curve of each ranking and the table of single heads.
namespace sparsify_steps {
namespace {

const char* const kRankings[] = {"taxonomy", "write_norm", "entropy"};  // the deterministic ones

// Temperature-1 samples from another stream than the analysed documents.
template <class Scalar>
std::vector<std::vector<int>> held_out_documents(const llama::Transformer<Scalar>& model, int documents, int tokens,
                                                 const Settings& settings) {
  std::vector<std::vector<int>> held(documents);
#pragma omp parallel for schedule(dynamic) num_threads(settings.threads)
  for (int d = 0; d < documents; ++d) {
    rng::Engine e = rng::engine(settings.seed, d, kHeldOutStream);
    held[d] = llama::sample(model, tokens, 1.0, e).tokens;
  }
  return held;
}

// The r-th random removal order of the n heads (a Fisher-Yates shuffle).
std::vector<int> random_order(int n, std::uint64_t seed, int r) {
  std::vector<int> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  rng::Engine e = rng::engine(seed, r, kRandomOrderStream);
  for (int i = n - 1; i > 0; --i) {
    boost::random::uniform_int_distribution<int> pick(0, i);
    std::swap(perm[i], perm[pick(e)]);
  }
  return perm;
}

struct RemovalOrder {
  std::string ranking;     // "taxonomy", ..., "random0", "random1", ...
  std::vector<int> heads;  // all heads, the first removed first
};

std::vector<RemovalOrder> removal_orders(const HeadScores& scores, const std::vector<Role>& class_order, int random_orders,
                                         std::uint64_t seed) {
  std::vector<RemovalOrder> orders;
  for (const char* r : kRankings) orders.push_back({r, removal_order(r, scores, class_order)});
  const int n = scores.layers * scores.heads;
  for (int r = 0; r < random_orders; ++r) orders.push_back({fmt::format("random{}", r), random_order(n, seed, r)});
  return orders;
}

// Heads removed together: the first `removed` of a ranking's order, or a single head.
struct HeadSet {
  std::string ranking;
  int removed;
  std::vector<int> heads;
};

// Every head set to measure: none (the reference), each order's prefixes, then each head alone.
struct HeadSets {
  std::vector<HeadSet> sets;
  std::vector<int> counts;   // the prefix lengths: every `step` heads, and all of them
  std::size_t first_single;  // the index of the first single head
};

HeadSets head_sets(const std::vector<RemovalOrder>& orders, int n, int step) {
  HeadSets plan;
  plan.sets.push_back({"none", 0, {}});
  for (int k = step; k < n; k += step) plan.counts.push_back(k);
  plan.counts.push_back(n);
  for (const auto& [name, order] : orders)
    for (int k : plan.counts) plan.sets.push_back({name, k, std::vector<int>(order.begin(), order.begin() + k)});
  plan.first_single = plan.sets.size();
  for (int i = 0; i < n; ++i) plan.sets.push_back({"single", 1, {i}});
  return plan;
}

// The mean NLL of each (head set, document) at index set * documents + document. All passes run
// in parallel with their results stored by index, so that they do not depend on the thread count.
template <class Scalar>
std::vector<double> measure_nll(const llama::Transformer<Scalar>& model, const HeadScores& scores, const std::vector<HeadSet>& sets,
                                const std::vector<std::vector<int>>& held, const Settings& settings) {
  const int D = static_cast<int>(held.size());
  const std::size_t tasks = sets.size() * static_cast<std::size_t>(D);
  std::vector<double> nll(tasks, NAN);
  Progress progress("sparsify", static_cast<long>(tasks), !settings.quiet);
#pragma omp parallel for schedule(dynamic) num_threads(settings.threads)
  for (std::size_t task = 0; task < tasks; ++task) {
    if (interrupted()) continue;
    const HeadSet& c = sets[task / D];
    const int d = static_cast<int>(task % D);
    llama::HeadGates gates = llama::HeadGates::Ones(scores.layers, scores.heads);
    for (int i : c.heads) gates(i / scores.heads, i % scores.heads) = 0.0;
    const Eigen::MatrixXd logits = model.forward(held[d], nullptr, &gates);
    nll[task] = llama::mean_nll(logits, held[d]);
    progress.advance();
  }
  progress.finish();
  if (interrupted()) throw Interrupted("interrupted during sparsification");
  return nll;
}

// Over the documents: the mean NLL with a head set removed, its mean increase over the
// reference's and the standard error of that increase.
struct DeltaStats {
  double nll, delta, delta_se;
};

class NllIncrease {
 public:
  NllIncrease(std::vector<double> nll, int documents) : nll_(std::move(nll)), D_(documents), base_(document_nll(0)) {}
  double base_mean() const { return std::accumulate(base_.begin(), base_.end(), 0.0) / D_; }
  DeltaStats of(std::size_t set) const {
    const std::vector<double> v = document_nll(set);
    double m = 0, m_nll = 0;
    for (int d = 0; d < D_; ++d) {
      m += (v[d] - base_[d]) / D_;
      m_nll += v[d] / D_;
    }
    double var = 0;
    for (int d = 0; d < D_; ++d) var += std::pow(v[d] - base_[d] - m, 2);
    const double se = D_ > 1 ? std::sqrt(var / (D_ - 1) / D_) : NAN;
    return {m_nll, m, se};
  }

 private:
  std::vector<double> document_nll(std::size_t set) const {
    return std::vector<double>(nll_.begin() + set * D_, nll_.begin() + (set + 1) * D_);
  }
  std::vector<double> nll_;
  int D_;
  std::vector<double> base_;  // the reference: no head removed
};

// The curve of each deterministic ranking; `mean_delta` gets its mean increase over the prefixes.
void add_ranking_rows(Table& curve, nlohmann::json& mean_delta, const HeadSets& plan, const NllIncrease& increase, int n) {
  for (const char* r : kRankings) {
    double area = 0;
    for (std::size_t c = 1; c < plan.first_single; ++c) {
      if (plan.sets[c].ranking != r) continue;
      const DeltaStats s = increase.of(c);
      curve.add_row({std::string(r), double(plan.sets[c].removed), double(plan.sets[c].removed) / n, s.nll, s.delta, s.delta_se, NAN});
      area += s.delta / plan.counts.size();
    }
    mean_delta[r] = area;
  }
}

// The random orders' curve: the mean over the orders at each prefix length, with their spread.
void add_random_rows(Table& curve, nlohmann::json& mean_delta, const HeadSets& plan, const NllIncrease& increase, int n) {
  double area = 0;
  for (int k : plan.counts) {
    std::vector<DeltaStats> st;
    for (std::size_t c = 1; c < plan.first_single; ++c)
      if (plan.sets[c].ranking.rfind("random", 0) == 0 && plan.sets[c].removed == k) st.push_back(increase.of(c));
    double m_nll = 0, m = 0, se = 0;
    for (const auto& s : st) {
      m_nll += s.nll / st.size();
      m += s.delta / st.size();
      se += s.delta_se / st.size();
    }
    double var = 0;
    for (const auto& s : st) var += std::pow(s.delta - m, 2);
    const double sd = st.size() > 1 ? std::sqrt(var / (st.size() - 1)) : NAN;
    curve.add_row({std::string("random"), double(k), double(k) / n, m_nll, m, se, sd});
    area += m / plan.counts.size();
  }
  mean_delta["random"] = area;
}

// Each head removed alone: single_heads.csv, the heads that break the model, the three worst.
struct SingleHeads {
  Table table;
  nlohmann::json breaking = nlohmann::json::array();
  nlohmann::json largest = nlohmann::json::array();
};

SingleHeads single_heads(const HeadScores& scores, const HeadSets& plan, const NllIncrease& increase, double break_delta) {
  const int H = scores.heads, n = scores.layers * scores.heads;
  SingleHeads out;
  out.table = Table({"layer", "head", "label", "write_norm", "entropy", "delta", "delta_se", "breaks"});
  std::vector<std::pair<double, int>> ranked;  // (delta, head): sorted below, largest delta first
  for (int i = 0; i < n; ++i) {
    const DeltaStats s = increase.of(plan.first_single + i);
    const bool breaks = s.delta > break_delta;
    out.table.add_row({double(i / H), double(i % H), to_string(scores.labels[i].label), scores.write_norm[i], scores.entropy[i],
                       s.delta, s.delta_se, breaks ? 1.0 : 0.0});
    if (breaks) out.breaking.push_back({{"layer", i / H}, {"head", i % H}, {"delta", s.delta}});
    ranked.push_back({s.delta, i});
  }
  std::sort(ranked.rbegin(), ranked.rend());
  for (int i = 0; i < std::min(3, n); ++i)
    out.largest.push_back({{"layer", ranked[i].second / H}, {"head", ranked[i].second % H}, {"delta", ranked[i].first}});
  return out;
}

}  // namespace
}  // namespace sparsify_steps

template <class Scalar>
SparsifyOutput sparsify(const llama::Transformer<Scalar>& model, const HeadScores& scores, const Params& params,
                        const Settings& settings, int tokens) {
  using namespace sparsify_steps;
  const int D = static_cast<int>(params.integer("sparsify.documents"));
  const int step = static_cast<int>(params.integer("sparsify.step"));
  const int R = static_cast<int>(params.integer("sparsify.random_orders"));
  const double break_delta = params.real("sparsify.break_delta");
  const std::vector<Role> class_order = parse_class_order(params.text("sparsify.order"), "sparsify.order");
  const int n = scores.layers * scores.heads;

  const std::vector<std::vector<int>> held = held_out_documents(model, D, tokens, settings);
  const HeadSets plan = head_sets(removal_orders(scores, class_order, R, settings.seed), n, step);
  const NllIncrease increase(measure_nll(model, scores, plan.sets, held, settings), D);

  SparsifyOutput out;
  out.curve = Table({"ranking", "removed", "fraction", "nll", "delta", "delta_se", "delta_sd_orders"});
  out.curve.add_row({std::string("none"), 0.0, 0.0, increase.base_mean(), 0.0, 0.0, NAN});
  nlohmann::json mean_delta = nlohmann::json::object();
  add_ranking_rows(out.curve, mean_delta, plan, increase, n);
  if (R > 0) add_random_rows(out.curve, mean_delta, plan, increase, n);
  SingleHeads single = single_heads(scores, plan, increase, break_delta);
  out.single = std::move(single.table);
  out.info = {{"held_out_documents", D},
              {"held_out_nll", increase.base_mean()},
              {"mean_delta_over_fractions", mean_delta},
              {"breaking_heads", single.breaking},
              {"largest_single_head_deltas", single.largest},
              {"break_delta", break_delta}};
  return out;
}

template SparsifyOutput sparsify(const llama::Transformer<double>&, const HeadScores&, const Params&, const Settings&, int);
template SparsifyOutput sparsify(const llama::Transformer<float>&, const HeadScores&, const Params&, const Settings&, int);

}  // namespace hdat::geometry::detail
