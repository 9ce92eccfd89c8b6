// `hdat sweep` and `hdat plot` end to end, through the program: bad input is refused before anything
// is written, a sweep killed mid-way resumes and recomputes only the missing points, shards merge to
// the same table, and every kind of folder gets a figure.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli.hpp"
#include "common.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kTiny = "--set mc_samples=512 --set t_max=5 --set n_points=5";
// Slower points (a longer integration) for the interruption test, so that the kill lands mid-way.
const std::string kSlow = "--set mc_samples=512 --set t_max=20 --set n_points=5";

std::map<std::string, fs::file_time_type> point_files(const fs::path& dir) {
  std::map<std::string, fs::file_time_type> out;
  for (const auto& e : fs::directory_iterator(dir / "points"))
    if (e.path().extension() == ".json") out[e.path().filename().string()] = e.last_write_time();
  return out;
}

bool wait_until(const std::function<bool()>& done, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!done()) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

TEST_CASE("malformed grids and bad values: exit code 2, one message naming the key, nothing written") {
  const fs::path dir = scratch("bad");
  struct Case {
    std::string args, key;
  };
  const Case cases[] = {
      {"--grid H=1:4", "H"},
      {"--grid 'eta=[0.5,-1]'", "eta"},
      {"--grid Hx=1:2:2", "Hx"},
      {"--grid 'F=[2,3]'", "prior.mean"},       // the model's own check, at the grid point F=3
      {"--grid 'H=[1,2]' --observable median:risk", "--observable"},
      {"--grid 'H=[1,2]' --mode no-such-command", "--mode"},
      {"--grid 'H=[1,2]' --shard 2/2", "--shard"},
      {"--grid 'H=[1,2]' --set eta=-1", "eta"},
      {"", "--grid"},
      {"--grid 'H=[2]' --plot", "--plot"},  // one point: nothing to draw against, said before computing it
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = clitest::run("sweep specialization " + kTiny + " " + c.args + " --out '" + dir.string() + "'");
    CHECK(r.code == 2);
    CHECK(r.err.find(c.key) != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
    CHECK(!fs::exists(dir));
  }
}

// A column of curve.csv is known before the sweep computes (ModelEntry::columns): a misspelt one is
// refused before any point (no start line, no progress). A run.json entry, or a column of a table
// known only once written, is checked on the first finished point. Either way nothing is left.
TEST_CASE("a misspelt observable stops the sweep, naming it and the nearest column, and leaves nothing written") {
  const fs::path dir = scratch("misspelt");
  struct Case {
    std::string model, mode, obs;
    bool before_any_point;
  };
  const std::vector<Case> cases = {{"specialization " + kTiny, "theory", "final:riks", true},
                                   {"specialization " + kTiny, "theory", "at:0.5:riks", true},
                                   {"specialization " + kTiny, "theory", "info:evnets.plateau_end", false},
                                   {"specialization " + kTiny, "theory", "riks", false},
                                   {"committee --set N=100 --set t_max=1 --set n_points=3 --set seeds=2", "simulate", "final:egg", false}};
  for (const Case& c : cases) {
    CAPTURE(c.obs);
    CAPTURE(c.mode);
    fs::remove_all(dir);
    const auto r = clitest::run("sweep " + c.model + " --mode " + c.mode + " --grid 'eta=[0.5,1,1.5,2]' --threads 1 --observable " + c.obs +
                                " --out '" + dir.string() + "'");
    CHECK(r.code == 2);
    CHECK(r.err.find(c.obs) != std::string::npos);
    CHECK(r.err.find("did you mean") != std::string::npos);
    CHECK(!fs::exists(dir));  // not sweep.json, not points/, not the folder the sweep would have made
    if (c.before_any_point) CHECK(r.err.find('\n') == r.err.size() - 1);  // the message alone: no start line
  }
  // A sweep folder that exists keeps what it had: its definition and finished points.
  fs::remove_all(dir);
  const std::string grid = " --grid 'eta=[0.5,1]' --threads 1 --quiet --out '" + dir.string() + "'";
  REQUIRE(clitest::run("sweep specialization " + kTiny + grid).code == 0);
  const std::string definition = clitest::slurp(dir / "sweep.json");
  const auto r = clitest::run("sweep specialization " + kTiny + grid + " --observable info:evnets.plateau_end");
  CHECK(r.code == 2);
  CHECK(fs::exists(dir / "sweep.csv"));
  CHECK(clitest::slurp(dir / "sweep.json") == definition);
}

TEST_CASE("an interrupted sweep (SIGTERM, then SIGKILL) resumes and recomputes only the missing points") {
  const std::string grid = "--grid prior.scale=0.25:2:8 --grid 'H=[1,2]'";  // 16 points
  const fs::path ref = scratch("kill-ref"), dir = scratch("kill");
  const auto r0 = clitest::run("sweep specialization " + kSlow + " " + grid + " --threads 2 --quiet --out '" + ref.string() + "'");
  REQUIRE(r0.code == 0);

  const std::string cmd = "sweep specialization " + kSlow + " " + grid + " --threads 1 --quiet --out '" + dir.string() + "'";
  // 1. Ctrl-C / SIGTERM: a clean stop that keeps the finished points and says which are missing.
  pid_t pid = clitest::spawn(cmd);
  REQUIRE(wait_until([&] { return clitest::count_files(dir / "points") >= 3; }, 120));
  kill(pid, SIGTERM);
  CHECK(clitest::wait_for(pid) == 130);
  const auto after_term = point_files(dir);
  REQUIRE(after_term.size() >= 3);
  REQUIRE(after_term.size() < 16);
  const json rec = json::parse(clitest::slurp(dir / "run.json"));
  CHECK(rec["this_run"]["interrupted"] == true);
  CHECK(rec["points"]["finished"] == after_term.size());
  CHECK(clitest::slurp(dir / "sweep.csv").find("pending") != std::string::npos);

  // 2. SIGKILL (a crash): nothing can be cleaned up, the finished points are on disk all the same.
  pid = clitest::spawn(cmd);
  REQUIRE(wait_until([&] { return clitest::count_files(dir / "points") >= after_term.size() + 2; }, 120));
  kill(pid, SIGKILL);
  clitest::wait_for(pid);
  const auto after_kill = point_files(dir);
  REQUIRE(after_kill.size() < 16);

  // 3. The same command finishes the rest and leaves the finished points alone.
  const auto r = clitest::run(cmd);
  REQUIRE(r.code == 0);
  const json fin = json::parse(clitest::slurp(dir / "run.json"));
  CHECK(fin["this_run"]["reused"] == after_kill.size());
  CHECK(fin["this_run"]["computed"] == 16 - after_kill.size());
  const auto final_files = point_files(dir);
  CHECK(final_files.size() == 16);
  for (const auto& [name, time] : after_kill) CHECK(final_files.at(name) == time);
  for (const auto& [name, time] : after_term) CHECK(after_kill.at(name) == time);
  CHECK(clitest::sweep_without_wall(dir / "sweep.csv") == clitest::sweep_without_wall(ref / "sweep.csv"));
}

TEST_CASE("threads and shards give the same sweep.csv; --merge assembles the shards") {
  const std::string grid = "--grid prior.scale=0.5:2:4 --grid 'activation=[softmax,softmax1,bayes]'";
  const fs::path one = scratch("threads1"), two = scratch("threads2"), sh = scratch("shards");
  REQUIRE(clitest::run("sweep specialization " + kTiny + " " + grid + " --threads 1 --out '" + one.string() + "'").code == 0);
  REQUIRE(clitest::run("sweep specialization " + kTiny + " " + grid + " --threads 2 --out '" + two.string() + "'").code == 0);
  const std::string a = clitest::sweep_without_wall(one / "sweep.csv");
  CHECK(a == clitest::sweep_without_wall(two / "sweep.csv"));
  CHECK(a.find("|ok|") != std::string::npos);

  REQUIRE(clitest::run("sweep specialization " + kTiny + " " + grid + " --shard 0/2 --out '" + sh.string() + "'").code == 0);
  CHECK(clitest::count_files(sh / "points") == 6);
  CHECK(!fs::exists(sh / "sweep.csv"));  // a shard writes only its points
  const auto partial = clitest::run("sweep --merge --out '" + sh.string() + "'");
  CHECK(partial.code == 1);  // not complete yet
  CHECK(clitest::slurp(sh / "sweep.csv").find("pending") != std::string::npos);
  REQUIRE(clitest::run("sweep specialization " + kTiny + " " + grid + " --shard 1/2 --out '" + sh.string() + "'").code == 0);
  const auto merged = clitest::run("sweep --merge --out '" + sh.string() + "'");
  CHECK(merged.code == 0);
  CHECK(clitest::sweep_without_wall(sh / "sweep.csv") == a);
}

TEST_CASE("a failing point is recorded and the rest of the sweep finishes") {
  const fs::path dir = scratch("fail");
  // rtol = atol = 1e-300 cannot be met: the step size underflows and the curve command exits 3.
  const auto r = clitest::run("sweep specialization " + kTiny + " --set atol=1e-300 --grid 'rtol=[1e-6,1e-300]' --grid 'prior.scale=[0.5,1]' --out '" +
                              dir.string() + "'");
  CHECK(r.code == 0);
  const hdat::Table t = hdat::Table::read_csv_file((dir / "sweep.csv").string());
  REQUIRE(t.rows() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    const bool bad = t.number(i, "rtol") < 1e-100;
    CHECK(t.text(i, "status") == (bad ? "numerical_failure" : "ok"));
    CHECK(std::isfinite(t.number(i, "final_risk")) != bad);  // a failed point's observables are NaN
    CHECK((t.text(i, "reason").find("underflow") != std::string::npos) == bad);
  }
  const json rec = json::parse(clitest::slurp(dir / "run.json"));
  CHECK(rec["points"]["by_status"]["numerical_failure"] == 2);
  CHECK(rec["failures"].size() == 2);
  CHECK(r.out.find("2 failed") != std::string::npos);
}

TEST_CASE("hdat plot draws every kind of folder") {
  const fs::path sw = scratch("plot-sweep"), cv = scratch("plot-curve"), bare = scratch("plot-bare"), empty = scratch("plot-empty");
  REQUIRE(clitest::run("sweep specialization " + kTiny + " --grid prior.scale=0.5:2:4 --grid eta=0.5:2:4 --out '" + sw.string() + "'").code == 0);
  // Two numeric axes of 4 values: heat maps, with a contour level.
  auto r = clitest::run("plot '" + sw.string() + "' --observable final:risk --contour 0.3");
  CHECK(r.code == 0);
  CHECK(fs::file_size(sw / "sweep_final_risk.png") > 1000);
  CHECK(fs::file_size(sw / "sweep_final_risk.svg") > 1000);
  CHECK(clitest::slurp(sw / "sweep_final_risk.gp").find("levels discrete 0.3") != std::string::npos);
  // Lines against one axis, one line per value of the other.
  r = clitest::run("plot '" + sw.string() + "' --lines --x eta");
  CHECK(r.code == 0);
  CHECK(fs::file_size(sw / "sweep.png") > 1000);
  CHECK(clitest::run("plot '" + sw.string() + "' --x nothing").code == 2);
  CHECK(clitest::run("plot '" + sw.string() + "' --observable nothing").code == 2);

  // A learning curve: the model's figures (or the generic ones), and the generic ones on request.
  REQUIRE(clitest::run("curve specialization " + kTiny + " --out '" + cv.string() + "'").code == 0);
  r = clitest::run("plot '" + cv.string() + "'");
  CHECK(r.code == 0);
  CHECK(r.out.find(".png") != std::string::npos);
  fs::remove(cv / "curve.png");
  r = clitest::run("plot '" + cv.string() + "' --generic");
  CHECK(r.code == 0);
  CHECK(fs::file_size(cv / "curve.png") > 1000);
  CHECK(clitest::slurp(cv / "curve.gp").find("bayes") != std::string::npos);  // the Bayes risk as a reference line
  CHECK(clitest::run("plot '" + cv.string() + "' --contour 1").code == 2);    // sweep options on a curve folder

  // Any folder with a CSV, even without run.json.
  fs::create_directories(bare);
  std::ofstream(bare / "data.csv") << "x,a,a_se,label\n1,0.5,0.1,u\n10,0.25,0.1,v\n100,0.125,0.1,w\n1000,0.0625,0.1,z\n";
  r = clitest::run("plot '" + bare.string() + "'");
  CHECK(r.code == 0);
  CHECK(fs::file_size(bare / "data.png") > 1000);
  CHECK(clitest::slurp(bare / "data.gp").find("set logscale x") != std::string::npos);  // x spans three decades

  fs::create_directories(empty);
  CHECK(clitest::run("plot '" + empty.string() + "'").code == 2);
  CHECK(clitest::run("plot '" + (empty / "absent").string() + "'").code == 2);
}
