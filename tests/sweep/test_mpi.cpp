// `mpirun -n 2 hdat sweep ...` (HDAT_MPI build only): the ranks split the grid and rank 0 writes the
// same sweep.csv as a threaded run.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "common.hpp"

namespace fs = std::filesystem;

TEST_CASE("2 MPI ranks give the same sweep.csv as threads") {
  const std::string args = "sweep specialization --set mc_samples=512 --set t_max=5 --set n_points=5 "
                           "--grid prior.scale=0.5:2:4 --grid 'activation=[softmax,bayes]' --grid 'H=[1,2]' --quiet --out ";
  const fs::path threads = scratch("mpi-threads"), ranks = scratch("mpi-ranks");
  REQUIRE(clitest::run(args + "'" + threads.string() + "' --threads 2").code == 0);
  // Root in containers needs --allow-run-as-root; two ranks on a small machine need --oversubscribe.
  const auto r = clitest::run(args + "'" + ranks.string() + "'", "mpirun --allow-run-as-root --oversubscribe -n 2");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto rec = nlohmann::json::parse(clitest::slurp(ranks / "run.json"));
  CHECK(rec["execution"]["kind"] == "mpi");
  CHECK(rec["execution"]["ranks"] == 2);
  CHECK(rec["this_run"]["computed"] == 16);  // each point once, over both ranks
  CHECK(clitest::sweep_without_wall(ranks / "sweep.csv") == clitest::sweep_without_wall(threads / "sweep.csv"));
  // Rank 0 alone prints the summary.
  CHECK(r.out.find("wrote") == r.out.rfind("wrote"));
  // A rerun under MPI reuses every point.
  const auto again = clitest::run(args + "'" + ranks.string() + "'", "mpirun --allow-run-as-root --oversubscribe -n 2");
  REQUIRE(again.code == 0);
  CHECK(nlohmann::json::parse(clitest::slurp(ranks / "run.json"))["this_run"]["reused"] == 16);
}
