// The committee model's declaration: what the harness needs, and nothing else.
#include "hdat/committee/declaration.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "hdat/committee/controlled.hpp"
#include "hdat/committee/model.hpp"
#include "hdat/committee/ode.hpp"
#include "hdat/committee/simulator.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/verdict.hpp"

namespace hdat::committee {

namespace {

StandardDefaults standard_defaults() {
  StandardDefaults d;
  d.t_max = 1000;  // past the plateau escape (t ≈ 360 from the seeds' mean start) into the approach to eg = 0
  d.n_points = 120;
  d.seeds = 8;
  d.dims = {500, 1000, 2000};
  d.drift_samples = 20000;
  d.drift_times = {0, 5, 20};
  d.size_key = "N";
  return d;
}

// A plateau to escape from exists only with exchangeable students (equal v0: the manifold of
// identical students is then invariant, derivation.md §7) and at least two teachers; otherwise the
// students specialise as part of the deterministic flow and validate compares the whole run.
bool has_plateau(const Config& s) { return s.K >= 2 && s.M >= 2 && !(s.v0.array() != s.v0(0)).any(); }

// The committee at one configuration: the parameters parsed once into its Config.
class Committee final : public Dynamics {
 public:
  explicit Committee(const Params& p)
      : config_(Config::from(p)),
        given_start_(p.has("Q0") ? std::optional<Eigen::VectorXd>(given_initial_state(p, config_)) : std::nullopt),
        full_engine_(p.text("engine") == "full"),
        test_size_(p.integer("test_size")),
        split_threshold_(p.real("split_threshold")),
        settings_(standard_settings(p, standard_defaults(), config_.layout())) {}

  DynamicsSettings settings() const override { return settings_; }
  StateLayout layout() const override { return config_.layout(); }
  // The closed-form theory has no sampling: every replica is the same theory.
  std::unique_ptr<OdeTheory> theory(int /*replica*/) const override { return std::make_unique<CommitteeODE>(config_); }
  // Q0/R0/T0 when given, else the overlaps of replica 0's initialisation at N; `curve` starts by
  // default from the seeds' mean of the replicas' initial overlaps (replica_initial_state).
  Eigen::VectorXd initial_state(const OdeTheory&) const override {
    return given_start_ ? *given_start_ : OnlineSGD(config_, config_.N, config_.seed, 0, 0).state();
  }
  std::optional<Eigen::VectorXd> replica_initial_state(std::uint64_t replica) const override {
    return OnlineSGD(config_, config_.N, config_.seed, replica, 0).state();
  }
  std::unique_ptr<FiniteSystem> system(double size, std::uint64_t replica) const override {
    const int N = static_cast<int>(size);
    if (full_engine_) return std::make_unique<OnlineSGD>(config_, N, config_.seed, replica, test_size_);
    return std::make_unique<ReducedSGD>(config_, N, config_.seed, replica, test_size_);
  }
  std::vector<EventFunction> events() const override {
    if (!has_plateau(config_)) return {};
    return {escape_event(config_, split_threshold_)};
  }
  std::string describe() const override {
    const Config& s = config_;
    std::string d = fmt::format("{}, K={}, M={}, eta={}", activation_name(s.activation), s.K, s.M, s.eta);
    if (s.train_v) d += fmt::format(", train_v (eta_v={})", s.eta_v);
    if (s.noise > 0) d += fmt::format(", noise={}", s.noise);
    if (s.wd != 0) d += fmt::format(", wd={}", s.wd);
    if (s.teacher == TeacherKind::gaussian) d += ", gaussian teacher";
    if (s.dropout_keep != 1.0) d += fmt::format(", dropout keep {}", s.dropout_keep);
    if (s.test_scale != 1.0) d += fmt::format(", test scale {}", s.test_scale);
    if (s.schedule) d += ", scheduled";
    return d;
  }
  void finish(const Bound&, const Computed& computed, RunOutput& out, Verdict&) const override {
    if (computed.curve) {
      const Trajectory& run = computed.curve->trajectory;
      if (!run.empty()) out.info["events"]["eg_final"] = run.observed(run.size() - 1, "eg").value;  // empty: interrupted at once
    }
    if (computed.simulation) {
      out.info["simulation"]["streams"] =
          "per replica k of the seed: teacher (seed, k, teacher), student init (seed, k, student_init), data (seed, k, training_data), "
          "test set (seed, k, test_set), drift samples (seed, k, drift_check)";
      out.info["simulation"]["test_size"] = test_size_;
    }
  }
  std::unique_ptr<ControlledTheory> controlled(int) const override { return std::make_unique<CommitteeControlled>(config_); }  // closed form

 private:
  Config config_;
  std::optional<Eigen::VectorXd> given_start_;
  bool full_engine_;
  long test_size_;
  double split_threshold_;
  DynamicsSettings settings_;
};

}  // namespace

const ParamSet& parameters() {
  static const ParamSet set = [] {
    ParamSet p;
    declare_model_keys(p);
    p.real("split_threshold", 0.3,
           "a student has left the plateau once its normalised overlaps with the teachers spread by this much (escape time, "
           "end of validate's window)",
           Range::positive());
    declare_standard_keys(p, standard_defaults());
    p.theory_only({"Q0", "R0", "T0", "split_threshold"});  // the theory's start and its event: no finite run changes
    return p;
  }();
  return set;
}

EventFunction escape_event(const Config& s, double threshold) {
  const StateLayout layout = s.layout();
  auto g = [layout, threshold](double, const Eigen::VectorXd& x) {
    const auto Q = layout.view(x, "Q"), R = layout.view(x, "R"), T = layout.view(x, "T");
    const Eigen::ArrayXd teacher_norm = T.diagonal().array().sqrt();
    double widest = -std::numeric_limits<double>::infinity();
    for (Eigen::Index i = 0; i < R.rows(); ++i) {
      const Eigen::ArrayXd r = R.row(i).transpose().array() / (std::sqrt(Q(i, i)) * teacher_norm);
      widest = std::max(widest, r.maxCoeff() - r.minCoeff());
    }
    return widest - threshold;
  };
  return {"escape_time", g, false, +1};
}

std::shared_ptr<const DynamicsModel> dynamics_model() {
  static const std::shared_ptr<const DynamicsModel> model = [] {
    auto m = std::make_shared<DynamicsModel>();
    m->bind = dynamics_of<Committee>();
    m->escape_event = "escape_time";
    m->start_keys = {"Q0", "R0", "T0"};
    return m;
  }();
  return model;
}

}  // namespace hdat::committee
