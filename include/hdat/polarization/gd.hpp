#pragma once
// Plain gradient descent on the finite model: V ← V − η ∂L/∂V, a ← a − η ∂L/∂a (tied: U and a),
// flow time t = η · steps: the finite system of the core's harness (FiniteSystem), whose blocks are
// the flow's state measured on the weights (u = Vᵀb, a, Q = VᵀV; or a, V). Along the run it checks
// the identities every step must satisfy (derivation.md §5, §10):
//   - mean(a) (softmax) or |a|² (scale-invariant normalisations) conserved by the flow; gradient
//     descent keeps mean(a) exactly and |a|² up to O(η²) per step;
//   - logistic value model: V − V(0) stays in span(β*), and |V_{k+1}|² − |V_k|² = 2ηγz + η²γ²b|s|²
//     exactly (the discrete form of d|V|²/dt = 2γz);
//   - the loss does not increase (for small η; reported).
// Its increment() is the drift check's: one step's change of the flow's state over η, which equals
// the flow's right-hand side exactly for u and a, and for Q after the exact η GᵀG of the step.
#include <Eigen/Dense>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hdat/core/model.hpp"
#include "hdat/core/table.hpp"
#include "hdat/polarization/full_model.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/normalization.hpp"
#include "hdat/polarization/observables.hpp"
#include "hdat/polarization/reduced.hpp"

namespace hdat::polarization {

/// Steps at which flow times are observed: round(t / lr), sorted, unique.
std::vector<long> steps_of(const std::vector<double>& times, double lr);
/// Times rounded to whole steps k·lr (sorted, unique): where gradient descent and the flow meet.
std::vector<double> on_step_grid(const std::vector<double>& times, double lr);

class GradientDescent : public FiniteSystem {
 public:
  /// From the instance's initial parameters; the blocks are those of make_flow(c, in).
  GradientDescent(const Config& c, const Instance& in, double lr);
  GradientDescent(const GradientDescent&) = delete;
  GradientDescent& operator=(const GradientDescent&) = delete;

  double time() const override { return lr_ * static_cast<double>(steps_); }
  void advance_to(double t) override { advance_steps(std::llround(t / lr_)); }
  Eigen::VectorXd state() const override;
  Observables observe() override;
  DriftTerms increment() override;
  /// steps, finite, wall_seconds, steps_per_second, invariants, events, identity_failures.
  nlohmann::json record() const override;
  /// The identities of every step (conservation laws, the |V|² identity, span(β*)) that failed.
  std::optional<std::vector<std::string>> failed_checks() const override { return identity_failures(); }

  /// Step until `steps` steps are done (or the state turns non-finite, or an interrupt).
  void advance_steps(long steps);
  long steps() const { return steps_; }
  bool finite() const { return finite_; }
  bool interrupted() const { return interrupted_; }
  double wall_seconds() const { return wall_seconds_; }
  /// The observables of the current weights (also tracks the identities that concern states).
  Measurement measure();
  const Eigen::MatrixXd& V() const { return V_; }  ///< V, or U for the tied model
  const Eigen::VectorXd& a() const { return a_; }
  /// Worst violations of the identities so far.
  nlohmann::json invariants() const;
  /// First crossings (sum: simplex / F; l1, relu: logits through 0), a non-finite state.
  const nlohmann::json& events() const { return events_; }
  /// The identities that fail their round-off bound (empty: all hold).
  std::vector<std::string> identity_failures() const;

 private:
  void step(bool check_identities);
  void watch_signs();
  void add_event(const std::string& kind, int index, const std::string& message);

  const Config c_;
  const Instance in_;
  const double lr_;
  FullModel model_;                   // refers to c_ and in_
  std::unique_ptr<FlowSystem> flow_;  // the theory's blocks (state_of)
  Eigen::MatrixXd V_, gV_;
  Eigen::VectorXd a_, ga_;
  long steps_ = 0;
  bool finite_ = true, interrupted_ = false;
  double wall_seconds_ = 0;
  // Identities.
  const bool value_logistic_;
  const Invariant invariant_kind_;
  const double invariant0_;
  const Eigen::VectorXd beta_hat_;  // β*/|β*|
  double invariant_drift_ = 0, energy_residual_ = 0, perp_ = 0, worst_increase_ = 0, loss_prev_ = 0;
  long increases_ = 0;
  double largest_logit_ = 0, largest_V_norm_ = 0;  // over measured states: the scale of the round-off bounds
  // Events of the discrete run.
  const bool watch_logits_, watch_simplex_;
  std::vector<char> seen_;
  Eigen::VectorXd sign0_;
  double F_prev_;
  nlohmann::json events_ = nlohmann::json::array();
};

struct GdOptions {
  double lr = 0.1;
  std::vector<double> times;     ///< requested flow times (rounded to whole steps)
  bool quiet = true;             ///< no progress line
};

/// A whole run observed at the requested times (the model's own analyses).
struct GdRun {
  std::vector<Observation> observations;  ///< at steps[k], k < observations.size() (t = steps[k] · lr)
  std::vector<long> steps;       ///< steps planned for observation
  long steps_done = 0;
  bool finite = true;
  bool interrupted = false;      ///< stopped by Ctrl-C (rows before it are kept)
  double wall_seconds = 0;
  nlohmann::json record;         ///< GradientDescent::record()
  nlohmann::json invariants;     ///< worst violations of the identities
  nlohmann::json events;         ///< first crossings, non-finite state
  Eigen::MatrixXd V_final;       ///< V (or U) at the last step
  Eigen::VectorXd a_final;       ///< a at the last step
  nlohmann::json to_json() const { return record; }
  /// sim.csv: observable_columns(c) + "step"; c: the run's own.
  Table table(const Config& c) const;
};

GdRun gradient_descent(const Config& c, const Instance& in, const GdOptions& opt);

}  // namespace hdat::polarization
