#pragma once
// Plain gradient descent on the finite model: V ← V − η ∂L/∂V, a ← a − η ∂L/∂a (tied: U and a),
// flow time t = η · steps. Measures the same observables as the theory, and checks along the run the
// identities every step must satisfy (derivation.md §5, §10):
//   - mean(a) (softmax) or |a|² (scale-invariant normalisations) conserved by the flow; gradient
//     descent keeps mean(a) exactly and |a|² up to O(η²) per step;
//   - logistic value model: V − V(0) stays in span(β*), and |V_{k+1}|² − |V_k|² = 2ηγz + η²γ²b|s|²
//     exactly (the discrete form of d|V|²/dt = 2γz);
//   - the loss does not increase (for small η);
//   - drift check: the one-step increment of the order parameters equals η times the reduced
//     right-hand side at the measured state (exactly for u and a; Q has an η² term).
#include <Eigen/Dense>
#include <nlohmann/json.hpp>
#include <vector>

#include "hdat/core/table.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"

namespace hdat::polarization {

struct GdOptions {
  double lr = 0.1;
  std::vector<double> times;     ///< requested flow times (rounded to whole steps)
  bool drift_check = true;       ///< compare increments with the reduced right-hand side (logistic, square)
  bool quiet = true;             ///< no progress line
};

struct GdRun {
  Table table;                   ///< observable columns + "step"
  std::vector<long> steps;       ///< recorded steps
  long steps_done = 0;
  bool finite = true;
  bool interrupted = false;      ///< stopped by Ctrl-C (rows before it are kept)
  double wall_seconds = 0;
  nlohmann::json invariants;     ///< worst violations of the identities above
  nlohmann::json events;         ///< first crossings (sum: simplex / F; l1, relu: logits through 0), non-finite state
  Eigen::MatrixXd V_final;       ///< V (or U) at the last step
  Eigen::VectorXd a_final;       ///< a at the last step
  nlohmann::json to_json() const;
};

/// Steps at which flow times are observed: round(t / lr), sorted, unique.
std::vector<long> steps_of(const std::vector<double>& times, double lr);

GdRun gradient_descent(const Config& c, const Instance& in, const GdOptions& opt);

}  // namespace hdat::polarization
