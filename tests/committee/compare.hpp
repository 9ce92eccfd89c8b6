#pragma once
// Theory against simulation for the committee tests: the drift check (mean one-step increment
// against the theory's terms at the measured state) and per-seed trajectories (the theory started
// from each run's own measured initial overlaps), with standard errors over samples and seeds.
#include <fmt/format.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "hdat/committee/ode.hpp"
#include "hdat/committee/simulator.hpp"
#include "hdat/core/integrate.hpp"

namespace committee_test {

using namespace hdat;
using namespace hdat::committee;

/// The drift check at one state: per term, the largest deviation in units of its allowance.
struct DriftCheck {
  std::vector<std::string> terms;
  std::vector<double> max_z;      ///< max over entries of |theory − mean| / se (entries with se > 0)
  std::vector<double> max_ratio;  ///< max over entries of |theory − mean| / allowed
  bool agree = true;
  std::string report() const {
    std::string s;
    for (std::size_t k = 0; k < terms.size(); ++k) s += fmt::format("{}: max|z| {:.2f} (ratio {:.2f})  ", terms[k], max_z[k], max_ratio[k]);
    return s;
  }
};

/// Mean of `samples` increments against theory.terms(state, time): an entry agrees when
/// |theory − mean| ≤ 4 se + (2L/N) · (largest |entry| of the term), the second part the allowance for
/// the O(L/N) bias of one finite step (|x|²/N, the (1 − wd/N)² of weight decay; derivation.md §7).
inline DriftCheck drift_check(OnlineSGD& sim, const CommitteeODE& theory, long samples) {
  const Eigen::VectorXd x = sim.state();
  const DriftTerms th = theory.terms(x, sim.time());
  const std::size_t nt = th.size();
  // Moments of the increments shifted by the first one (exactly zero variance for a deterministic entry).
  std::vector<Eigen::VectorXd> shift(nt), sum(nt), sq(nt);
  for (long s = 0; s < samples; ++s) {
    const DriftTerms inc = sim.increment();
    for (std::size_t k = 0; k < nt; ++k) {
      if (inc.name(k) != th.name(k)) throw std::logic_error("drift_check: terms differ");
      if (s == 0) {
        shift[k] = inc.value(k);
        sum[k] = sq[k] = Eigen::VectorXd::Zero(x.size());
      }
      const Eigen::VectorXd d = inc.value(k) - shift[k];
      sum[k] += d;
      sq[k] += d.cwiseAbs2();
    }
  }
  const double bias = 2.0 * sim.setup().fields() / sim.dimension();
  DriftCheck out;
  for (std::size_t k = 0; k < nt; ++k) {
    const Eigen::VectorXd shifted = sum[k] / samples, mean = shift[k] + shifted;
    const Eigen::VectorXd se = ((sq[k] / samples - shifted.cwiseAbs2()).cwiseMax(0.0) / (samples - 1.0)).cwiseSqrt();
    const double scale = th.value(k).lpNorm<Eigen::Infinity>();
    double zmax = 0, rmax = 0;
    for (Eigen::Index j = 0; j < mean.size(); ++j) {
      const double dev = std::fabs(th.value(k)(j) - mean(j));
      const double sej = se(j);  // 0 for a deterministic entry (weight decay)
      if (sej > 0) zmax = std::max(zmax, dev / sej);
      const double allowed = 4 * sej + bias * scale;
      rmax = std::max(rmax, allowed > 0 ? dev / allowed : (dev > 0 ? std::numeric_limits<double>::infinity() : 0.0));
    }
    out.terms.push_back(th.name(k));
    out.max_z.push_back(zmax);
    out.max_ratio.push_back(rmax);
    out.agree = out.agree && rmax <= 1.0;
  }
  return out;
}

/// Simulated runs at dimension N: the states (and eg) at the times, per seed.
struct Runs {
  int N = 0;
  std::vector<double> times;
  std::vector<std::vector<Eigen::VectorXd>> states;  ///< [seed][time]
};

inline Runs simulate(const Config& s, int N, int seeds, const std::vector<double>& times, std::uint64_t seed = 0) {
  Runs r;
  r.N = N;
  r.times = times;
  r.states.resize(seeds);
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < seeds; ++k) {
    OnlineSGD sgd(s, N, seed, static_cast<std::uint64_t>(k), 0);
    for (double t : times) {
      sgd.advance_to(t);
      r.states[k].push_back(sgd.state());
    }
  }
  return r;
}

/// Per-seed gaps sim − theory (the theory started from the seed's measured t = 0 state).
struct Comparison {
  std::vector<double> times;
  Eigen::MatrixXd mean_gap, se_gap;  ///< components × times: mean over seeds and its standard error
  double max_z = 0;                  ///< max |mean gap| / se over components and times (t > 0)
  double rms = 0;                    ///< √ mean over seeds, times (t > 0), components of gap²
  double worst_ratio = 0;            ///< max |mean gap| / (4 se + allowance)
  bool agree = true;
  std::string worst;                 ///< where the largest ratio is
};

/// Compare the runs with the theory of setup `s` (possibly with a broken term). An entry agrees when
/// |mean gap| ≤ 4 se + rel · (largest |value| of the component over the run).
inline Comparison compare(const Config& s, const Runs& runs, double rel = 0.0) {
  const CommitteeODE ode(s, 1);
  const int seeds = static_cast<int>(runs.states.size()), nt = static_cast<int>(runs.times.size());
  const int n = static_cast<int>(runs.states[0][0].size());
  std::vector<Eigen::MatrixXd> gaps(seeds, Eigen::MatrixXd::Zero(n, nt));
  Eigen::VectorXd scale = Eigen::VectorXd::Zero(n);
  for (int k = 0; k < seeds; ++k) {
    int j = 0;
    IntegrateOptions opt;
    opt.rtol = 1e-9;
    opt.atol = 1e-12;
    integrate([&](const ConstVecRef& x, VecRef dx, double t) { ode(x, dx, t); }, runs.states[k][0], 0.0, runs.times,
              [&](double, const Eigen::VectorXd& x) {
                gaps[k].col(j) = runs.states[k][j] - x;
                scale = scale.cwiseMax(x.cwiseAbs());
                ++j;
                return true;
              },
              opt);
    if (j != nt) throw std::runtime_error("compare: the theory stopped early");
  }
  Comparison c;
  c.times = runs.times;
  c.mean_gap = Eigen::MatrixXd::Zero(n, nt);
  for (const auto& g : gaps) c.mean_gap += g / seeds;
  c.se_gap = Eigen::MatrixXd::Zero(n, nt);
  double sq = 0;
  long count = 0;
  for (const auto& g : gaps) {
    c.se_gap += (g - c.mean_gap).cwiseAbs2();
    sq += g.rightCols(nt - 1).squaredNorm();
    count += static_cast<long>(n) * (nt - 1);
  }
  c.se_gap = (c.se_gap / (seeds - 1.0) / seeds).cwiseSqrt();
  c.rms = std::sqrt(sq / count);
  const StateLayout layout = s.layout();
  for (int j = 1; j < nt; ++j)
    for (int i = 0; i < n; ++i) {
      const double dev = std::fabs(c.mean_gap(i, j)), se = c.se_gap(i, j);
      if (se > 0) c.max_z = std::max(c.max_z, dev / se);
      const double allowed = 4 * se + rel * scale(i);
      const double ratio = allowed > 0 ? dev / allowed : (dev > 1e-12 ? std::numeric_limits<double>::infinity() : 0.0);
      if (ratio > c.worst_ratio) {
        c.worst_ratio = ratio;
        c.worst = fmt::format("{} at t = {:g}: gap {:.3g} +- {:.2g}", layout.component_name(i), runs.times[j], c.mean_gap(i, j), se);
      }
    }
  c.agree = c.worst_ratio <= 1.0;
  return c;
}

}  // namespace committee_test
