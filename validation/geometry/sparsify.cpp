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

template <class Scalar>
SparsifyOutput sparsify(const llama::Transformer<Scalar>& model, const HeadScores& scores, const Params& params,
                        const Settings& settings, int tokens) {
  const int D = static_cast<int>(params.integer("sparsify.documents"));
  const int step = static_cast<int>(params.integer("sparsify.step"));
  const int R = static_cast<int>(params.integer("sparsify.random_orders"));
  const double break_delta = params.real("sparsify.break_delta");
  const std::vector<Role> class_order = parse_class_order(params.text("sparsify.order"), "sparsify.order");
  const int L = scores.layers, H = scores.heads, n = L * H;

  // Held-out documents: temperature-1 samples from another stream than the analysed documents.
  std::vector<std::vector<int>> held(D);
#pragma omp parallel for schedule(dynamic) num_threads(settings.threads)
  for (int d = 0; d < D; ++d) {
    rng::Engine e = rng::engine(settings.seed, d, kHeldOutStream);
    held[d] = llama::sample(model, tokens, 1.0, e).tokens;
  }

  // Every configuration to measure: (ranking, heads removed) prefixes, and single heads.
  struct Config {
    std::string ranking;
    int removed;
    std::vector<int> heads;
  };
  std::vector<Config> configs;
  configs.push_back({"none", 0, {}});
  std::vector<std::pair<std::string, std::vector<int>>> orders;
  for (const char* r : {"taxonomy", "write_norm", "entropy"}) orders.push_back({r, removal_order(r, scores, class_order)});
  for (int r = 0; r < R; ++r) {
    std::vector<int> perm(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    rng::Engine e = rng::engine(settings.seed, r, kRandomOrderStream);
    for (int i = n - 1; i > 0; --i) {
      boost::random::uniform_int_distribution<int> pick(0, i);
      std::swap(perm[i], perm[pick(e)]);
    }
    orders.push_back({fmt::format("random{}", r), perm});
  }
  std::vector<int> counts;
  for (int k = step; k < n; k += step) counts.push_back(k);
  counts.push_back(n);
  for (const auto& [name, order] : orders)
    for (int k : counts) configs.push_back({name, k, std::vector<int>(order.begin(), order.begin() + k)});
  const std::size_t first_single = configs.size();
  for (int i = 0; i < n; ++i) configs.push_back({"single", 1, {i}});

  // All (configuration, document) passes in parallel; results stored by index (thread-count independent).
  const std::size_t tasks = configs.size() * static_cast<std::size_t>(D);
  std::vector<double> nll(tasks, NAN);
  Progress progress("sparsify", static_cast<long>(tasks), !settings.quiet);
#pragma omp parallel for schedule(dynamic) num_threads(settings.threads)
  for (std::size_t task = 0; task < tasks; ++task) {
    if (interrupted()) continue;
    const Config& c = configs[task / D];
    const int d = static_cast<int>(task % D);
    llama::HeadGates gates = llama::HeadGates::Ones(L, H);
    for (int i : c.heads) gates(i / H, i % H) = 0.0;
    const Eigen::MatrixXd logits = model.forward(held[d], nullptr, &gates);
    nll[task] = llama::mean_nll(logits, held[d]);
    progress.advance();
  }
  progress.finish();
  if (interrupted()) throw NumericalError("interrupted during sparsification");

  auto doc_nll = [&](std::size_t config) { return std::vector<double>(nll.begin() + config * D, nll.begin() + (config + 1) * D); };
  const std::vector<double> base = doc_nll(0);
  const double base_mean = std::accumulate(base.begin(), base.end(), 0.0) / D;
  auto delta_stats = [&](std::size_t config) {
    const std::vector<double> v = doc_nll(config);
    double m = 0, m_nll = 0;
    for (int d = 0; d < D; ++d) {
      m += (v[d] - base[d]) / D;
      m_nll += v[d] / D;
    }
    double var = 0;
    for (int d = 0; d < D; ++d) var += std::pow(v[d] - base[d] - m, 2);
    const double se = D > 1 ? std::sqrt(var / (D - 1) / D) : NAN;
    return std::array<double, 3>{m_nll, m, se};
  };

  SparsifyOutput out;
  out.curve = Table({"ranking", "removed", "fraction", "nll", "delta", "delta_se", "delta_sd_orders"});
  out.curve.add_row({std::string("none"), 0.0, 0.0, base_mean, 0.0, 0.0, NAN});
  nlohmann::json mean_delta = nlohmann::json::object();
  // Deterministic rankings.
  for (const char* r : {"taxonomy", "write_norm", "entropy"}) {
    double area = 0;
    for (std::size_t c = 1; c < first_single; ++c) {
      if (configs[c].ranking != r) continue;
      const auto s = delta_stats(c);
      out.curve.add_row({std::string(r), double(configs[c].removed), double(configs[c].removed) / n, s[0], s[1], s[2], NAN});
      area += s[1] / counts.size();
    }
    mean_delta[r] = area;
  }
  // Random orders: mean over orders, with their spread.
  if (R > 0) {
    double area = 0;
    for (int k : counts) {
      std::vector<std::array<double, 3>> st;
      for (std::size_t c = 1; c < first_single; ++c)
        if (configs[c].ranking.rfind("random", 0) == 0 && configs[c].removed == k) st.push_back(delta_stats(c));
      double m_nll = 0, m = 0, se = 0;
      for (const auto& s : st) {
        m_nll += s[0] / st.size();
        m += s[1] / st.size();
        se += s[2] / st.size();
      }
      double var = 0;
      for (const auto& s : st) var += std::pow(s[1] - m, 2);
      const double sd = st.size() > 1 ? std::sqrt(var / (st.size() - 1)) : NAN;
      out.curve.add_row({std::string("random"), double(k), double(k) / n, m_nll, m, se, sd});
      area += m / counts.size();
    }
    mean_delta["random"] = area;
  }

  out.single = Table({"layer", "head", "label", "write_norm", "entropy", "delta", "delta_se", "breaks"});
  nlohmann::json breaking = nlohmann::json::array();
  std::vector<std::pair<double, int>> ranked;
  for (int i = 0; i < n; ++i) {
    const auto s = delta_stats(first_single + i);
    const bool breaks = s[1] > break_delta;
    out.single.add_row({double(i / H), double(i % H), to_string(scores.labels[i].label), scores.write_norm[i], scores.entropy[i], s[1],
                        s[2], breaks ? 1.0 : 0.0});
    if (breaks) breaking.push_back({{"layer", i / H}, {"head", i % H}, {"delta", s[1]}});
    ranked.push_back({s[1], i});
  }
  std::sort(ranked.rbegin(), ranked.rend());
  nlohmann::json worst = nlohmann::json::array();
  for (int i = 0; i < std::min(3, n); ++i)
    worst.push_back({{"layer", ranked[i].second / H}, {"head", ranked[i].second % H}, {"delta", ranked[i].first}});
  out.info = {{"held_out_documents", D},
              {"held_out_nll", base_mean},
              {"mean_delta_over_fractions", mean_delta},
              {"breaking_heads", breaking},
              {"largest_single_head_deltas", worst},
              {"break_delta", break_delta}};
  return out;
}

template SparsifyOutput sparsify(const llama::Transformer<double>&, const HeadScores&, const Params&, const Settings&, int);
template SparsifyOutput sparsify(const llama::Transformer<float>&, const HeadScores&, const Params&, const Settings&, int);

}  // namespace hdat::geometry::detail
