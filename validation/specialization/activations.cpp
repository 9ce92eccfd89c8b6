// `hdat analyze specialization --set analysis=activations`: the paper's claims 4 and 5 at one
// setting. Every variant (activation, aggregation, fixed or trained bias) is a theory curve from the
// same initial overlaps; for each: the final risk against the Bayes risk, the best pruned model of
// every size, and the per-sequence gating of its heads (total attention weight and weight on the
// signal token of each head on the sequences of each support point of the prior).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <optional>

#include "hdat/core/harness.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/specialization/analyze.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/declaration.hpp"

namespace hdat::specialization {

namespace {

namespace fs = std::filesystem;

struct Variant {
  std::string name;
  nlohmann::json overrides;  ///< flat key -> value, applied to the base configuration
};

// The comparison of the issue: softmax; softmax1 without bias (mean and sum aggregation), with a
// fixed negative bias and with a trained one (sum), and trained with mean aggregation; bayes.
nlohmann::json default_variants() {
  return nlohmann::json::parse(R"([
    {"name": "softmax", "activation": "softmax"},
    {"name": "softmax1 mean, b=0", "activation": "softmax1", "aggregation": "mean"},
    {"name": "softmax1 sum, b=0", "activation": "softmax1", "aggregation": "sum"},
    {"name": "softmax1 sum, b=-3", "activation": "softmax1", "aggregation": "sum", "bias": -3},
    {"name": "softmax1 sum, b trained", "activation": "softmax1", "aggregation": "sum", "train_bias": true},
    {"name": "softmax1 mean, b trained", "activation": "softmax1", "aggregation": "mean", "train_bias": true},
    {"name": "bayes", "activation": "bayes"}
  ])");
}

std::vector<Variant> read_variants(const Params& p) {
  const nlohmann::json list = p.has("variants") ? p.raw("variants") : default_variants();
  if (!list.is_array() || list.empty()) throw InputError("variants", "must be a non-empty list of objects of key overrides");
  const int H = static_cast<int>(p.integer("H"));
  std::vector<Variant> out;
  for (const auto& v : list) {
    if (!v.is_object()) throw InputError("variants", "every variant must be an object of key overrides, got " + v.dump());
    Variant var;
    std::string auto_name;
    for (const auto& [key, value] : v.items()) {
      if (key == "name") {
        if (!value.is_string()) throw InputError("variants", "a variant's name must be a string");
        var.name = value.get<std::string>();
        continue;
      }
      if (key == "analysis" || key == "variants") throw InputError("variants", "a variant cannot set '" + key + "'");
      // A number as bias is every head's.
      var.overrides[key] = (key == "bias" && value.is_number()) ? nlohmann::json(std::vector<double>(static_cast<std::size_t>(H), value.get<double>()))
                                                                 : value;
      auto_name += (auto_name.empty() ? "" : ", ") + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    if (var.name.empty()) var.name = auto_name.empty() ? "base" : auto_name;
    out.push_back(var);
  }
  return out;
}

// FNV-1a of a variant's resolved configuration: names its persisted curve.
std::string config_hash(const Params& p) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : p.flat().dump()) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

// One variant's theory curve, typed: its trajectory, what specialization adds to a curve (Bayes
// risk, the plateau's end, the pruning of the final state), and the curve's run.json entries, which
// the activations record repeats (its final blocks, events, pruning and solver).
struct VariantCurve {
  int exit_code = 0;
  std::string status, message;  ///< the integration's (IntegrateSummary::status_name, message)
  hdat::Trajectory curve;
  double bayes = NAN, bayes_se = NAN, plateau_end = NAN;
  std::vector<PruneRow> prune;
  nlohmann::json info;
};

// A variant persisted in DIR/variants by an earlier run of this command (read back here only, to
// resume): none unless it is exactly this configuration's finished curve.
std::optional<VariantCurve> load_variant(const fs::path& file, const Params& pv, const StateLayout& layout) {
  if (file.empty() || !fs::exists(file)) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(read_file(file), nullptr, false);
  if (j.is_discarded() || j.value("config", nlohmann::json()) != pv.flat()) return std::nullopt;
  try {  // a file cut short or edited by hand is computed again, not trusted
    auto curve = hdat::Trajectory::from_table(Table::from_csv(j.at("curve").get<std::string>()), layout);
    if (!curve) return std::nullopt;
    VariantCurve v;
    v.curve = std::move(*curve);
    v.info = j.at("info");
    v.status = v.info.at("solver").value("status", std::string()), v.message = v.info.at("solver").value("message", std::string());
    v.bayes = v.info.at("bayes_risk").get<double>(), v.bayes_se = v.info.at("bayes_risk_se").get<double>();
    const nlohmann::json& end = v.info.at("events").at("plateau_end");
    v.plateau_end = end.is_number() ? end.get<double>() : NAN;
    for (const auto& r : v.info.value("prune", nlohmann::json::array()))
      v.prune.push_back({r.at("kept_heads").get<int>(), r.at("risk").get<double>(), r.at("risk_se").get<double>(), r.at("heads").get<std::vector<int>>()});
    return v;
  } catch (const std::exception&) {  // (a missing entry, a table that does not parse)
    return std::nullopt;
  }
}

// A variant computed: the curve's theory run (from the start `curve` uses) and specialization's
// results on it, kept typed; saved at once to DIR/variants when it finished.
VariantCurve compute_variant(const Bound& bound, const fs::path& file) {
  const CurveStart start = curve_start(bound);
  const TheoryRun run = theory_curve(bound, start);
  const auto& flow = dynamic_cast<const OrderParameterFlow&>(bound.theory(0));
  const CurveResults results = curve_results(bound.params(), flow.setup(), flow, run);
  RunOutput o = curve_output(bound, start, run);  // its run.json entries, as `curve` writes them
  add_curve_results(flow.setup(), results, run, o);
  VariantCurve v;
  v.exit_code = interrupted() ? code(ExitCode::interrupted) : run.solver.ok() ? 0 : code(ExitCode::numerical_failure);
  v.status = run.solver.status_name(), v.message = run.solver.message;
  v.curve = run.trajectory;
  v.bayes = results.bayes, v.bayes_se = results.bayes_se, v.plateau_end = results.events.plateau_end;
  if (results.prune) v.prune = *results.prune;
  v.info = std::move(o.info);
  if (!file.empty() && v.exit_code == 0) {
    fs::create_directories(file.parent_path());
    const nlohmann::json j = {{"config", bound.params().flat()}, {"curve", o.tables.at("curve.csv").to_csv()}, {"info", v.info}};
    write_file_atomic(file, j.dump() + "\n");
  }
  return v;
}

std::string vector_text(const Eigen::VectorXd& v) {
  std::string s;
  for (Eigen::Index i = 0; i < v.size(); ++i) s += fmt::format("{}{:.4g}", i ? " " : "", v(i));
  return s;
}

// The feature a head carries (largest |M_hf|) and the feature a support point carries (largest |θ_f|).
int argmax_abs(const Eigen::VectorXd& v) {
  Eigen::Index i = 0;
  v.cwiseAbs().maxCoeff(&i);
  return static_cast<int>(i);
}

}  // namespace

RunOutput compare_activations(const Params& p, RunContext& ctx) {
  const std::vector<Variant> variants = read_variants(p);
  const int H = static_cast<int>(p.integer("H")), F = static_cast<int>(p.integer("F"));
  Table summary_table({"variant", "activation", "aggregation", "bias", "train_bias", "final_risk", "final_risk_se", "bayes_risk",
                       "bayes_risk_se", "excess", "plateau_end", "b_final", "kept_F_risk", "kept_F_increase", "solver"});
  Table prune({"variant", "kept_heads", "risk", "risk_se", "risk_increase", "heads"});
  Table gating({"variant", "head", "head_feature", "point", "theta", "point_feature", "prob", "carries_feature", "total_weight",
                "total_weight_se", "signal_weight", "signal_weight_se"});
  Table curves({"variant", "t", "risk", "risk_se"});
  nlohmann::json record = nlohmann::json::array();
  std::string text = fmt::format("activations compared (H={}, F={}, L={}, eta={}, t_max={:g}, {} prior)\n", H, F, p.integer("L"),
                                 p.real("eta"), observation_times(p).back(), p.text("prior.kind"));
  text += fmt::format("  {:<28} {:>17} {:>9} {:>14} {:>18}\n", "variant", "final risk", "excess", "b (final)",
                      fmt::format("risk with {} heads", F));
  Progress progress("activations", static_cast<long>(variants.size()), !ctx.quiet);
  int exit_code = 0;
  for (std::size_t iv = 0; iv < variants.size(); ++iv) {
    const Variant& v = variants[iv];
    Params pv;
    try {
      pv = p.with(v.overrides).with({{"prune", true}});
      check(pv);
    } catch (const InputError& e) {
      throw InputError("variants", fmt::format("variant '{}': {}", v.name, e.what()));
    }
    const Bound bound(*dynamics_model(), pv);
    const auto& flow = dynamic_cast<const OrderParameterFlow&>(bound.theory(0));
    const Config& s = flow.setup();
    const fs::path file = ctx.out.empty() ? fs::path() : ctx.out / "variants" / (config_hash(pv) + ".json");
    const std::optional<VariantCurve> kept = load_variant(file, pv, bound.layout());
    const VariantCurve vc = kept ? *kept : compute_variant(bound, file);
    if (vc.exit_code != 0) {
      exit_code = vc.exit_code;
      text += fmt::format("  {:<28} STOPPED (exit code {}): {}\n", v.name, vc.exit_code, vc.message);
      if (interrupted()) break;
      continue;
    }
    const std::size_t last = vc.curve.size() - 1;
    const Eigen::VectorXd& x = vc.curve.state(last);
    const Eigen::MatrixXd M = flow.layout().view(x, "M"), R = flow.layout().view(x, "R");
    const Eigen::VectorXd b = s.bias_in(x);
    const Measured final_risk = vc.curve.observed(last, "risk");
    const double risk = final_risk.value, risk_se = final_risk.se, bayes = vc.bayes, bayes_se = vc.bayes_se;
    // Pruning: every size; the model with F heads is claim 5's "H − F heads removed".
    double kept_F = NAN;
    for (const PruneRow& r : vc.prune) {
      prune.add_row(std::vector<Cell>{v.name, static_cast<double>(r.kept), r.risk, r.risk_se, r.risk - vc.prune.front().risk, heads_text(r)});
      if (r.kept == F) kept_F = r.risk;
    }
    const std::string activation = pv.text("activation");
    const std::string aggregation = activation == "bayes" ? "joint" : pv.text("aggregation");
    summary_table.add_row(std::vector<Cell>{v.name, activation, aggregation, vector_text(s.bias), s.train_bias ? 1.0 : 0.0, risk, risk_se,
                                            bayes, bayes_se, risk - bayes, vc.plateau_end, vector_text(b), kept_F, kept_F - risk,
                                            vc.status});
    for (std::size_t r = 0; r < vc.curve.size(); ++r) {
      const Measured at = vc.curve.observed(r, "risk");
      curves.add_row(std::vector<Cell>{v.name, vc.curve.t(r), at.value, at.se});
    }
    nlohmann::json vr = {{"variant", v.name},   {"overrides", v.overrides},     {"final_risk", risk},      {"final_risk_se", risk_se},
                         {"bayes_risk", bayes}, {"bayes_risk_se", bayes_se},    {"final", vc.info.at("final")}, {"events", vc.info.at("events")},
                         {"prune", vc.info.value("prune", nlohmann::json())}, {"solver", vc.info.at("solver")}};
    text += fmt::format("  {:<28} {:.4f} ± {:.4f} {:>+9.4f} {:>14} {:>18}\n", v.name, risk, risk_se, risk - bayes,
                        s.train_bias ? vector_text(b) : (s.activation == Activation::softmax ? "-" : vector_text(b)),
                        std::isfinite(kept_F) ? fmt::format("{:.4f} ({:+.4f})", kept_F, kept_F - risk) : "-");
    // Gating: per head, its weights on the sequences that carry its feature and on those that do not.
    if (flow.enumerated_prior()) {
      const HeadGating g = flow.gating(M, R, b);
      std::string line;
      for (int h = 0; h < H; ++h) {
        const int hf = argmax_abs(M.row(h).transpose());
        double with = 0, without = 0, pw = 0, pwo = 0;
        for (int k = 0; k < g.thetas.rows(); ++k) {
          const int kf = argmax_abs(g.thetas.row(k).transpose());
          const bool carries = kf == hf && g.thetas.row(k).cwiseAbs().maxCoeff() > 0;
          gating.add_row(std::vector<Cell>{v.name, static_cast<double>(h), static_cast<double>(hf), static_cast<double>(k),
                                           vector_text(g.thetas.row(k).transpose()), static_cast<double>(kf), g.probs(k),
                                           carries ? 1.0 : 0.0, g.total(k, h), g.total_se(k, h), g.on_signal(k, h), g.on_signal_se(k, h)});
          (carries ? with : without) += g.probs(k) * g.total(k, h);
          (carries ? pw : pwo) += g.probs(k);
        }
        vr["gating"].push_back({{"head", h}, {"feature", hf}, {"total_weight_with_feature", pw > 0 ? nlohmann::json(with / pw) : nlohmann::json()},
                                {"total_weight_without_feature", pwo > 0 ? nlohmann::json(without / pwo) : nlohmann::json()}});
        line += fmt::format("{}h{} (f{}) {}/{}", h ? ", " : "", h, hf, pw > 0 ? fmt::format("{:.3f}", with / pw) : "-",
                            pwo > 0 ? fmt::format("{:.3f}", without / pwo) : "-");
      }
      text += fmt::format("  {:<28} total weight with/without the head's feature: {}\n", "", line);
    }
    record.push_back(vr);
    progress.advance(1, v.name);
    if (interrupted()) break;
  }
  progress.finish();
  RunOutput out;
  out.tables["activations.csv"] = summary_table;
  out.tables["prune.csv"] = prune;
  out.tables["gating.csv"] = gating;
  out.tables["curves.csv"] = curves;
  out.info["activations"] = record;
  out.summary = text;
  out.exit_code = interrupted() ? code(ExitCode::interrupted) : exit_code;
  if (interrupted()) out.summary += "  INTERRUPTED: the finished variants are kept in DIR/variants (rerun the same command to complete the rest)\n";
  return out;
}

}  // namespace hdat::specialization
