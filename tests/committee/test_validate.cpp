// Theory against simulation: the drift check term by term, and trajectories at N ~ 1000 with the
// theory started from each run's measured initial overlaps; both FAIL with any one term of the
// theory broken (dropped). The finite-size trend of the gap: RMS ∝ N^(-1/2).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "common.hpp"
#include "compare.hpp"
#include "hdat/core/integrate.hpp"

using namespace hdat;
using namespace hdat::committee;
using namespace committee_test;

namespace {

// Every term on, and no exchangeable units (v0 and v* unequal): the N = ∞ flow has no saddle of
// symmetric students, so runs and theory agree pathwise over the whole window.
Config all_terms(Activation g = Activation::erf) {
  Config s = committee_test::setup(2, 2, g);
  s.eta = 1.0;
  s.eta_v = 1.0;
  s.train_v = true;
  s.noise = 0.3;
  s.wd = 0.01;
  s.v0 << 1.0, 0.5;
  s.vstar << 1.0, 0.5;
  return s;
}

Config broken(Config s, const std::string& term) {
  s.broken_term = term;
  return s;
}

}  // namespace

TEST_CASE("drift check: the mean one-step increment equals the theory's drift term by term; a broken term is caught") {
  // A broken term is judged at t = 0 and t = 5 and must be caught at one of them at least: a term can be
  // small at one state (the linear committee's second-layer drift at t = 5 is 1 to 7 standard errors
  // over seeds 1-8, its v near the optimum; at t = 0 it is over 70).
  for (Activation g : {Activation::erf, Activation::linear}) {
    const Config s = all_terms(g);
    OnlineSGD sim(s, 1000, 3, 0, 0);
    std::map<std::string, int> times_caught;
    for (double t : {0.0, 5.0, 20.0}) {
      sim.advance_to(t);
      const long samples = 20000;
      // The same increments judged against the correct theory and against each broken one.
      OnlineSGD probe = sim;
      const DriftCheck good = drift_check(probe, CommitteeODE(s), samples);
      CAPTURE(activation_name(g));
      CAPTURE(t);
      CAPTURE(good.report());
      CHECK(good.agree);
      MESSAGE(fmt::format("{} t = {:g}: {}", activation_name(g), t, good.report()));
      if (t <= 5.0)
        for (const std::string& term : s.active_terms()) {
          OnlineSGD again = sim;
          const DriftCheck bad = drift_check(again, CommitteeODE(broken(s, term)), samples);
          times_caught[term] += bad.agree ? 0 : 1;
          MESSAGE(fmt::format("  broken {}: {}", term, bad.report()));
        }
    }
    for (const std::string& term : s.active_terms()) {
      CAPTURE(activation_name(g));
      CAPTURE(term);
      CHECK(times_caught[term] >= 1);
    }
  }
}

TEST_CASE("trajectories at N = 1000 agree with the theory from each run's initial overlaps; every broken term disagrees") {
  const Config s = all_terms();
  std::vector<double> times = lin_spaced(0.0, 50.0, 26);
  const Runs runs = simulate(s, 1000, 16, times);
  const Comparison good = compare(s, runs);
  CAPTURE(good.worst);
  CHECK(good.agree);
  MESSAGE(fmt::format("correct theory: max |mean gap|/se = {:.2f}, worst ratio {:.2f} ({}), RMS gap {:.2e}", good.max_z, good.worst_ratio,
                      good.worst, good.rms));
  for (const std::string& term : s.active_terms()) {
    const Comparison bad = compare(broken(s, term), runs);
    CAPTURE(term);
    CHECK(!bad.agree);
    MESSAGE(fmt::format("broken {}: max |mean gap|/se = {:.1f} ({})", term, bad.max_z, bad.worst));
  }
}

TEST_CASE("the symmetric plateau: runs and theory agree on the approach to the plateau; a dropped eta^2 term disagrees") {
  // Exchangeable students (defaults: K = M = 2, v = v* = 1, eta = 0.5): the theory from each run's
  // initial overlaps holds until the runs leave the plateau (t ~ 150 at N = 1000), whose exact time
  // is set also by the SGD noise of the run itself (an O(1) random shift, not a finite-size error).
  Config s = committee_test::setup(2, 2);
  const Runs runs = simulate(s, 1000, 16, lin_spaced(0.0, 60.0, 31));
  const Comparison good = compare(s, runs);
  CAPTURE(good.worst);
  CHECK(good.agree);
  MESSAGE(fmt::format("plateau: max |mean gap|/se = {:.2f} ({})", good.max_z, good.worst));
  for (const std::string& term : {std::string("eta_linear"), std::string("eta_squared")}) {
    const Comparison bad = compare(broken(s, term), runs);
    CAPTURE(term);
    CHECK(!bad.agree);
    MESSAGE(fmt::format("plateau, broken {}: max |mean gap|/se = {:.1f} ({})", term, bad.max_z, bad.worst));
  }
}

TEST_CASE("finite-size trend: the RMS gap between runs and theory shrinks like N^(-1/2)") {
  const Config s = all_terms();
  const std::vector<double> times = lin_spaced(0.0, 30.0, 16);
  std::vector<double> logN, logGap;
  std::string table;
  for (int N : {250, 500, 1000, 2000}) {
    const Comparison c = compare(s, simulate(s, N, 16, times, 7));
    logN.push_back(std::log(N));
    logGap.push_back(std::log(c.rms));
    table += fmt::format("N = {}: RMS gap {:.3e}; ", N, c.rms);
  }
  const double mx = std::accumulate(logN.begin(), logN.end(), 0.0) / logN.size();
  const double my = std::accumulate(logGap.begin(), logGap.end(), 0.0) / logGap.size();
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < logN.size(); ++i) sxy += (logN[i] - mx) * (logGap[i] - my), sxx += (logN[i] - mx) * (logN[i] - mx);
  const double slope = sxy / sxx;
  MESSAGE(table << "fitted exponent " << fmt::format("{:.3f}", slope));
  CHECK(slope == doctest::Approx(-0.5).epsilon(0.3));
}
