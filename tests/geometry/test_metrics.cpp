// Token-selection metrics: the deterministic bounds as properties on many random inputs, the
// spec's closed-form cases, tie conventions, the fast evaluator against the definitions, the
// random baseline, and clear errors on bad input.
#include <doctest/doctest.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <numeric>

#include "hdat/core/error.hpp"
#include "hdat/geometry/metrics.hpp"

using namespace hdat;
using namespace hdat::geometry;

namespace {

struct Input {
  Eigen::VectorXd alpha;
  Eigen::MatrixXd values;
};

// Random α (normalised) and values; `coarse` draws both from a few levels so that ties in α and
// in the distances are frequent (the ≤ / < conventions then matter).
Input random_input(rng::Engine& e, int n, int d, bool coarse) {
  boost::random::normal_distribution<double> g;
  boost::random::uniform_int_distribution<int> level(0, 3);
  boost::random::uniform_real_distribution<double> u(0.01, 1.0);
  Input in;
  in.alpha.resize(n);
  in.values.resize(d, n);
  for (int i = 0; i < n; ++i) {
    in.alpha(i) = coarse ? 1.0 + level(e) : u(e);
    for (int c = 0; c < d; ++c) in.values(c, i) = coarse ? level(e) - 1.5 : g(e);
  }
  in.alpha /= in.alpha.sum();
  return in;
}

Eigen::MatrixXd contributions(const Input& in) {
  Eigen::MatrixXd y = in.values;
  for (Eigen::Index i = 0; i < y.cols(); ++i) y.col(i) *= in.alpha(i);
  return y;
}

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

void check_bounds(const SetMetrics& m) {
  const double N = m.N;
  CHECK(m.precision >= N / (N + m.ginv) - 1e-15);
  CHECK(m.recall >= std::max(0.0, 1.0 - m.ginv / N) - 1e-15);
  const bool perfect = m.precision == 1.0 && m.recall == 1.0 && m.F == 1.0;
  CHECK((m.margin > 0) == (m.ginv == 0));
  CHECK((m.ginv == 0) == perfect);
  CHECK(m.precision > 0);
  CHECK(m.precision <= 1);
  CHECK(m.recall >= 0);
  CHECK(m.recall <= 1);
}

void same(const SetMetrics& a, const SetMetrics& b) {
  CHECK(a.N == b.N);
  CHECK(a.precision == b.precision);
  CHECK(a.recall == b.recall);
  CHECK(a.F == b.F);
  CHECK(a.ginv == b.ginv);
  CHECK(a.margin == doctest::Approx(b.margin).epsilon(1e-12).scale(1));
}

}  // namespace

TEST_CASE("bounds P >= N/(N+GInv), R >= 1 - GInv/N, margin > 0 <=> GInv = 0 <=> P = R = F = 1 on random inputs") {
  rng::Engine e = rng::engine(42);
  boost::random::uniform_int_distribution<int> size(2, 24), width(1, 6);
  int perfect = 0, imperfect = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = size(e), d = width(e);
    const Input in = random_input(e, n, d, trial % 2 == 1);
    const Eigen::MatrixXd y = contributions(in);
    for (int N = 1; N < n; ++N) {
      const std::vector<int> chosen = random_prefix(n, N, e);  // any set, not only top-N
      for (Distance dist : {Distance::euclidean, Distance::cosine}) {
        const SetMetrics m = set_metrics_reference(y, iota(n), chosen, dist);
        check_bounds(m);
        (m.ginv == 0 ? perfect : imperfect)++;
      }
    }
  }
  CHECK(perfect > 100);  // both sides of the equivalence were exercised
  CHECK(imperfect > 100);
}

TEST_CASE("the evaluator (sort once, s_N grown over the grid) equals the definitions") {
  rng::Engine e = rng::engine(43);
  boost::random::uniform_int_distribution<int> size(2, 70), width(1, 9);
  SelectionGeometry geo;
  QueryCurves out;
  for (int trial = 0; trial < 150; ++trial) {
    const int n = size(e), d = width(e);
    const Input in = random_input(e, n, d, trial % 3 == 0);
    const Eigen::MatrixXd y = contributions(in);
    CurveOptions o;
    o.ranking = trial % 2 ? Ranking::contribution : Ranking::attention;
    o.exclude = trial % 4 == 0 ? 0 : -1;
    o.random_repeats = 0;
    geo.evaluate(in.alpha, in.values, o, nullptr, out);
    std::vector<int> candidates;
    for (int i = 0; i < n; ++i)
      if (i != o.exclude) candidates.push_back(i);
    REQUIRE(out.N == n_grid(o.n_max, static_cast<int>(candidates.size())));
    const std::vector<int> order = top_order(in.alpha, in.values, candidates, o.ranking);
    for (std::size_t k = 0; k < out.N.size(); ++k) {
      const std::vector<int> top(order.begin(), order.begin() + out.N[k]);
      for (Distance dist : {Distance::euclidean, Distance::cosine}) {
        const SetMetrics ref = set_metrics_reference(y, candidates, top, dist);
        same(out.top[static_cast<int>(dist)][k], ref);
        check_bounds(out.top[static_cast<int>(dist)][k]);
      }
    }
  }
}

TEST_CASE("random baseline: nested sets, each around its own aggregate, mean over the repeats") {
  rng::Engine e = rng::engine(44);
  const Input in = random_input(e, 40, 5, false);
  const Eigen::MatrixXd y = contributions(in);
  CurveOptions o;
  o.random_repeats = 5;
  SelectionGeometry geo;
  QueryCurves out;
  rng::Engine draw = rng::engine(9, 1, 2), replay = rng::engine(9, 1, 2);
  geo.evaluate(in.alpha, in.values, o, &draw, out);
  REQUIRE(out.N == std::vector<int>{1, 2, 4, 8, 16, 32});
  std::array<std::vector<SetMetrics>, 2> mean;
  for (auto& m : mean) m.assign(out.N.size(), SetMetrics{});
  for (int r = 0; r < o.random_repeats; ++r) {
    const std::vector<int> prefix = random_prefix(40, 32, replay);
    for (std::size_t k = 0; k < out.N.size(); ++k) {
      const std::vector<int> set(prefix.begin(), prefix.begin() + out.N[k]);
      for (int dist = 0; dist < 2; ++dist) {
        const SetMetrics m = set_metrics_reference(y, iota(40), set, static_cast<Distance>(dist));
        mean[dist][k].F += m.F / o.random_repeats;
        mean[dist][k].precision += m.precision / o.random_repeats;
        mean[dist][k].recall += m.recall / o.random_repeats;
        mean[dist][k].ginv += m.ginv / o.random_repeats;
      }
    }
  }
  for (int dist = 0; dist < 2; ++dist)
    for (std::size_t k = 0; k < out.N.size(); ++k) {
      CHECK(out.random[dist][k].N == out.N[k]);
      CHECK(out.random[dist][k].F == doctest::Approx(mean[dist][k].F).epsilon(1e-12));
      CHECK(out.random[dist][k].precision == doctest::Approx(mean[dist][k].precision).epsilon(1e-12));
      CHECK(out.random[dist][k].recall == doctest::Approx(mean[dist][k].recall).epsilon(1e-12));
      CHECK(out.random[dist][k].ginv == doctest::Approx(mean[dist][k].ginv).epsilon(1e-12));
    }

  SUBCASE("random_prefix draws uniformly without repetition") {
    rng::Engine g = rng::engine(5);
    std::vector<int> hits(10, 0);
    const int draws = 20000;
    for (int r = 0; r < draws; ++r) {
      const std::vector<int> p = random_prefix(10, 3, g);
      CHECK(p.size() == 3u);
      CHECK(p[0] != p[1]);
      CHECK(p[0] != p[2]);
      CHECK(p[1] != p[2]);
      for (int x : p) hits[x]++;
    }
    // Each index is in the first 3 with probability 3/10: binomial sd sqrt(draws·0.3·0.7) ≈ 65.
    for (int h : hits) CHECK(std::abs(h - 6000) < 5 * 65);
  }
}

TEST_CASE("closed form: Euclidean N = 1 gives P = R = F = 1 for any selection") {
  rng::Engine e = rng::engine(45);
  for (int trial = 0; trial < 100; ++trial) {
    const Input in = random_input(e, 12, 4, false);
    const Eigen::MatrixXd y = contributions(in);
    for (int i = 0; i < 12; ++i) {
      const SetMetrics m = set_metrics_reference(y, iota(12), std::vector<int>{i}, Distance::euclidean);
      CHECK(m.precision == 1.0);
      CHECK(m.recall == 1.0);
      CHECK(m.F == 1.0);
    }
  }
}

TEST_CASE("closed form: orthogonal values of equal norm give P = R = F = 1 for any α and N") {
  rng::Engine e = rng::engine(46);
  SelectionGeometry geo;
  QueryCurves out;
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 16;
    Input in = random_input(e, n, n, false);
    // An orthonormal basis from a random Gaussian matrix, scaled to a common norm.
    Eigen::HouseholderQR<Eigen::MatrixXd> qr(in.values);
    const Eigen::MatrixXd Q = qr.householderQ() * Eigen::MatrixXd::Identity(n, n);
    in.values = 2.5 * Q;
    CurveOptions o;
    o.n_max = 16;
    o.random_repeats = 4;
    rng::Engine r = rng::engine(trial);
    geo.evaluate(in.alpha, in.values, o, &r, out);
    for (int dist = 0; dist < 2; ++dist)
      for (std::size_t k = 0; k < out.N.size(); ++k) {
        CHECK(out.top[dist][k].F == 1.0);
        CHECK(out.random[dist][k].F == 1.0);  // any set, random ones too
        CHECK(out.top[dist][k].margin > 0);
      }
  }
}

TEST_CASE("closed form: equal values give 1 unless an unselected α ties the smallest selected α") {
  Input in;
  in.values = Eigen::MatrixXd::Ones(3, 5);
  in.values.row(1) *= -2.0;
  SelectionGeometry geo;
  QueryCurves out;
  CurveOptions o;
  o.random_repeats = 0;
  SUBCASE("no ties") {
    in.alpha = Eigen::VectorXd{{0.35, 0.25, 0.2, 0.12, 0.08}};
    geo.evaluate(in.alpha, in.values, o, nullptr, out);
    REQUIRE(out.N == std::vector<int>{1, 2, 4});
    for (std::size_t k = 0; k < out.N.size(); ++k) {
      CHECK(out.top[0][k].precision == 1.0);
      CHECK(out.top[0][k].recall == 1.0);
    }
  }
  SUBCASE("a tie at the boundary: P = 2/3, R = 1/2, F = 4/7 at N = 2") {
    in.alpha = Eigen::VectorXd{{0.4, 0.2, 0.2, 0.1, 0.1}};
    geo.evaluate(in.alpha, in.values, o, nullptr, out);
    // S = {0, 1} (tie to the earlier index); source 2 has y_2 = y_1 so D_2 = ρ_max: contamination,
    // and ρ_min = D_1, so source 1 is not recalled (strict).
    CHECK(out.top[0][1].precision == doctest::Approx(2.0 / 3.0).epsilon(1e-15));
    CHECK(out.top[0][1].recall == 0.5);
    CHECK(out.top[0][1].F == doctest::Approx(4.0 / 7.0).epsilon(1e-15));
    CHECK(out.top[0][1].margin == 0.0);
    CHECK(out.top[0][1].ginv == 1.0);
    CHECK(out.top[0][0].F == 1.0);  // N = 1: no tie at the boundary
    CHECK(out.top[0][2].precision < 1.0);  // N = 4: α_4 ties α_3
  }
}

TEST_CASE("closed form: the worked example α = (0.4, 0.3, 0.2, 0.1), v = (e1, e2, 0, (4,3)), N = 2") {
  const Eigen::VectorXd alpha{{0.4, 0.3, 0.2, 0.1}};
  Eigen::MatrixXd values(2, 4);
  values << 1, 0, 0, 4,  //
      0, 1, 0, 3;
  SelectionGeometry geo;
  QueryCurves out;
  CurveOptions o;
  o.random_repeats = 0;
  geo.evaluate(alpha, values, o, nullptr, out);
  REQUIRE(out.N == std::vector<int>{1, 2});
  const SetMetrics& m = out.top[0][1];
  CHECK(m.precision == doctest::Approx(2.0 / 3.0).epsilon(1e-15));
  CHECK(m.recall == 0.0);
  CHECK(m.F == 0.0);
  CHECK(m.ginv == 2.0);
  // D = (0.3, 0.4, 0.5, 0): ρ_max = 0.4, ρ_min = 0.
  CHECK(m.margin == doctest::Approx(-0.4).epsilon(1e-12));
}

TEST_CASE("tie conventions of the top-N order") {
  const Eigen::VectorXd flat = Eigen::VectorXd::Constant(4, 0.25);
  const Eigen::MatrixXd v = Eigen::MatrixXd::Ones(2, 4);
  const std::vector<int> all = iota(4);
  CHECK(top_order(flat, v, all, Ranking::attention) == std::vector<int>{0, 1, 2, 3});
  CHECK(top_order(flat, v, all, Ranking::attention, Tie::later) == std::vector<int>{3, 2, 1, 0});
  // By contribution |y_i| = α_i |v_i|: (0.5·1, 0.25·2, 0.25·2) all tie -> index order; by α, 0 first.
  const Eigen::VectorXd a{{0.5, 0.25, 0.25}};
  Eigen::MatrixXd w(1, 3);
  w << 1, 2, -2;
  CHECK(top_order(a, w, iota(3), Ranking::contribution) == std::vector<int>{0, 1, 2});
  Eigen::MatrixXd w2(1, 3);
  w2 << 1, 1, -3;
  CHECK(top_order(a, w2, iota(3), Ranking::contribution) == std::vector<int>{2, 0, 1});
  CHECK(top_order(a, w2, iota(3), Ranking::attention) == std::vector<int>{0, 1, 2});
}

TEST_CASE("the metrics are not monotone in N (nothing forces them to be)") {
  rng::Engine e = rng::engine(47);
  SelectionGeometry geo;
  QueryCurves out;
  CurveOptions o;
  o.random_repeats = 0;
  int up = 0, down = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Input in = random_input(e, 33, 4, false);
    geo.evaluate(in.alpha, in.values, o, nullptr, out);
    for (std::size_t k = 1; k + 1 < out.N.size(); ++k) {
      up += out.top[0][k + 1].F > out.top[0][k].F;
      down += out.top[0][k + 1].F < out.top[0][k].F;
    }
  }
  CHECK(up > 0);
  CHECK(down > 0);
}

TEST_CASE("N grid and invalid inputs") {
  CHECK(n_grid(256, 300) == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256});
  CHECK(n_grid(256, 256) == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128});  // N < candidates
  CHECK(n_grid(256, 1).empty());
  CHECK(n_grid(6, 100) == std::vector<int>{1, 2, 4});
  SelectionGeometry geo;
  QueryCurves out;
  CurveOptions o;
  const Eigen::MatrixXd v = Eigen::MatrixXd::Ones(2, 3);
  CHECK_THROWS_AS(geo.evaluate(Eigen::VectorXd(), Eigen::MatrixXd(2, 0), o, nullptr, out), InputError);
  CHECK_THROWS_AS(geo.evaluate(Eigen::VectorXd::Ones(4) / 4, v, o, nullptr, out), InputError);  // 4 weights, 3 vectors
  CHECK_THROWS_AS(geo.evaluate(Eigen::VectorXd{{0.5, 0.6, -0.1}}, v, o, nullptr, out), InputError);
  CHECK_THROWS_AS(geo.evaluate(Eigen::VectorXd{{0.5, NAN, 0.1}}, v, o, nullptr, out), InputError);
  Eigen::MatrixXd bad = v;
  bad(0, 1) = INFINITY;
  CHECK_THROWS_AS(geo.evaluate(Eigen::VectorXd{{0.5, 0.4, 0.1}}, bad, o, nullptr, out), InputError);
  CHECK_THROWS_AS(geo.evaluate(Eigen::VectorXd{{0.5, 0.4, 0.1}}, Eigen::MatrixXd(0, 3), o, nullptr, out), InputError);
  o.n_max = 0;
  CHECK_THROWS_AS(geo.evaluate(Eigen::VectorXd{{0.5, 0.4, 0.1}}, v, o, nullptr, out), InputError);
  // One visible source: no N with 1 <= N < 1; the grid is empty, nothing is measured.
  o.n_max = 8;
  geo.evaluate(Eigen::VectorXd::Ones(1), Eigen::MatrixXd::Ones(2, 1), o, nullptr, out);
  CHECK(out.N.empty());
  // Invalid N for a single set: all or none selected.
  std::vector<double> scratch;
  const std::vector<double> D = {0.1, 0.2};
  CHECK_THROWS_AS(metrics_from_distances(D, std::vector<char>{1, 1}, scratch), InputError);
  CHECK_THROWS_AS(metrics_from_distances(D, std::vector<char>{0, 0}, scratch), InputError);
  CHECK_THROWS_AS(metrics_from_distances(D, std::vector<char>{1}, scratch), InputError);
  CHECK_THROWS_AS(set_metrics_reference(Eigen::MatrixXd::Ones(2, 3), iota(3), iota(3), Distance::euclidean), InputError);
}
