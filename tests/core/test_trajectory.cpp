// Typed trajectories: a run's table, read back, is the same run; a mean carries the standard error
// of the mean of every quantity.
#include <doctest/doctest.h>

#include <cmath>

#include "hdat/core/trajectory.hpp"

using namespace hdat;

namespace {

StateLayout layout() {
  StateLayout l;
  l.add("M", 2, 1);                // entries M_0_0, M_1_0 (flat 0, 1)
  l.add("Q", 2, 2, true);          // Q_0_0, Q_0_1, Q_1_1 (column-major: flat 2, 4 and 5; flat 3 is Q(1, 0))
  return l;
}

// eg with its sampling error, then the blocks, then an exact observable.
Observables observed(double eg, double eg_se, double norm) {
  Observables o;
  o.add("eg", eg, eg_se).blocks_here().add("norm", norm);
  return o;
}

Eigen::VectorXd state(double a) {
  Eigen::VectorXd x(6);
  x << a, 2 * a, 3 * a, 4 * a, 4 * a + 1e-3, 5 * a;  // Q(1, 0) = 4a, Q(0, 1) = 4a + 1e-3: the table lists Q(0, 1)
  return x;
}

}  // namespace

TEST_CASE("a run's table lists t, each observable with its error where estimated, the blocks where the run put them") {
  Trajectory run(layout(), observed(0, 0, 0));
  run.append(0.0, observed(0.5, 0.01, 1.0), state(1.0));
  run.append(2.5, observed(0.25, 0.02, 1.5), state(2.0));
  const Table t = run.table();
  CHECK(t.columns() == std::vector<std::string>{"t", "eg", "eg_se", "M_0_0", "M_1_0", "Q_0_0", "Q_0_1", "Q_1_1", "norm"});
  REQUIRE(t.rows() == 2);
  CHECK(t.number(1, "t") == 2.5);
  CHECK(t.number(1, "eg_se") == 0.02);
  CHECK(t.number(1, "Q_0_1") == 8.001);  // Q(0, 1): flat index 4 (column-major), the upper triangle
  CHECK(t.number(1, "Q_1_1") == 10.0);
  // The quantities: the observables, then the listed entries.
  REQUIRE(run.quantities() == 7);
  CHECK(run.quantity_name(0) == "eg");
  CHECK(run.quantity_name(2) == "M_0_0");
  CHECK(run.quantity(1, run.entry_quantity(3)).value == 8.001);
  CHECK(run.quantity(1, 0).se == 0.02);
  CHECK(run.quantity(1, run.entry_quantity(3)).se == 0.0);
}

TEST_CASE("a run read back from its table is the same run (a resumed seed equals the live one)") {
  Trajectory run(layout(), observed(0, 0, 0));
  for (int k = 0; k < 4; ++k) run.append(0.1 * k + 1.0 / 3, observed(0.5 / (k + 1), 0.01 * k, std::sqrt(k + 2.0)), state(std::exp(0.3 * k)));
  const std::optional<Trajectory> back = Trajectory::from_table(Table::from_csv(run.table().to_csv()), layout());
  REQUIRE(back);
  CHECK(back->table().to_csv() == run.table().to_csv());
  CHECK(back->observables() == run.observables());
  for (std::size_t r = 0; r < run.size(); ++r) {
    CHECK(back->t(r) == run.t(r));
    CHECK(back->state(r) == run.state(r));  // bit for bit: the live run keeps its state as the table lists it
    for (std::size_t q = 0; q < run.quantities(); ++q) CHECK(back->quantity(r, q).se == run.quantity(r, q).se);
  }
  // A symmetric block is kept symmetric, from its upper triangle.
  CHECK(run.state(0)(3) == run.state(0)(4));
  CHECK(run.state(0)(3) == state(std::exp(0.0))(4));
  // A table without the layout's columns is no run of it.
  CHECK_FALSE(Trajectory::from_table(Table({"t", "eg"}), layout()));
}

TEST_CASE("the mean of runs: every quantity's mean and the standard error of that mean") {
  std::vector<Trajectory> runs;
  const double eg[3] = {0.2, 0.4, 0.9};
  for (int s = 0; s < 3; ++s) {
    Trajectory run(layout(), observed(0, 0, 0));
    run.append(0.0, observed(eg[s], 0.05, 1.0), state(s + 1.0));
    run.append(1.0, observed(eg[s] / 2, 0.05, 1.0), state(s + 2.0));
    runs.push_back(run);
  }
  const Trajectory mean = Trajectory::mean_of(runs);
  REQUIRE(mean.size() == 2);
  CHECK(mean.is_mean());
  // eg at row 0: 0.2, 0.4, 0.9: mean 0.5, sample variance 0.13, SE sqrt(0.13 / 3).
  CHECK(mean.quantity(0, 0).value == doctest::Approx(0.5));
  CHECK(mean.quantity(0, 0).se == doctest::Approx(std::sqrt(0.13 / 3)));
  // M_0_0 at row 1: 2, 3, 4: mean 3, SE sqrt(1 / 3) (the runs' own errors are not the mean's).
  CHECK(mean.quantity(1, mean.entry_quantity(0)).value == doctest::Approx(3.0));
  CHECK(mean.quantity(1, mean.entry_quantity(0)).se == doctest::Approx(std::sqrt(1.0 / 3)));
  CHECK(mean.state(1)(0) == doctest::Approx(3.0));
  // Its table: every value with its standard error, in a run's column order.
  CHECK(mean.table().columns() == std::vector<std::string>{"t", "eg", "eg_se", "M_0_0", "M_0_0_se", "M_1_0", "M_1_0_se", "Q_0_0", "Q_0_0_se",
                                                         "Q_0_1", "Q_0_1_se", "Q_1_1", "Q_1_1_se", "norm", "norm_se"});
  // One run: its values, standard error 0; none: a table with t alone.
  CHECK(Trajectory::mean_of({runs[1]}).quantity(0, 0).value == 0.4);
  CHECK(Trajectory::mean_of({runs[1]}).quantity(0, 0).se == 0.0);
  CHECK(Trajectory::mean_of({}).table().columns() == std::vector<std::string>{"t"});
}

TEST_CASE("a run whose observables change along the way is refused") {
  Trajectory run(layout(), observed(0, 0, 0));
  run.append(0.0, observed(0.5, 0.01, 1.0), state(1.0));
  Observables other;
  other.add("risk", 0.1);
  CHECK_THROWS_AS(run.append(1.0, other, state(1.0)), std::logic_error);
}
