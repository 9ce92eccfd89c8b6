// hdat's committee curve against an INDEPENDENT implementation of the same equations on given
// initial overlaps: tests/committee/reference_ode.py (NumPy; Saad–Solla's Λ forms of the integrals,
// every index tuple evaluated, classical RK4 at fixed step) run with Debian's /usr/bin/python3.
// hdat integrates with adaptive dopri5; the two must agree to the reference's discretisation error.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "hdat/committee/ode.hpp"
#include "hdat/core/integrate.hpp"

using namespace hdat;
using namespace hdat::committee;
using json = nlohmann::json;

namespace {

json matrix_json(const Eigen::MatrixXd& m) {
  json rows = json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    json row = json::array();
    for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(m(i, j));
    rows.push_back(row);
  }
  return rows;
}

Eigen::MatrixXd matrix_from(const json& j) {
  Eigen::MatrixXd m(j.size(), j[0].size());
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index k = 0; k < m.cols(); ++k) m(i, k) = j[i][k].get<double>();
  return m;
}

// Run the reference on (s, o) at `times`; returns its output.
json reference(const Config& s, const Overlaps& o, const std::vector<double>& times, double dt, const std::string& tag) {
  const char* src = std::getenv("HDAT_SOURCE_DIR");
  const std::filesystem::path script = std::filesystem::path(src ? src : ".") / "tests/committee/reference_ode.py";
  REQUIRE(std::filesystem::exists(script));
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("hdat_committee_reference_{}_{}", tag, ::getpid());
  std::filesystem::create_directories(dir);
  json in = {{"K", s.K}, {"M", s.M}, {"activation", activation_name(s.activation)}, {"eta", s.eta}, {"eta_v", s.eta_v},
             {"train_v", s.train_v}, {"noise", s.noise}, {"wd", s.wd}, {"vstar", std::vector<double>(s.vstar.data(), s.vstar.data() + s.M)},
             {"v0", std::vector<double>(o.v.data(), o.v.data() + s.K)}, {"Q0", matrix_json(o.Q)}, {"R0", matrix_json(o.R)},
             {"T0", matrix_json(o.T)}, {"times", times}, {"dt", dt}};
  std::ofstream(dir / "in.json") << in.dump();
  const std::string cmd = fmt::format("/usr/bin/python3 '{}' '{}' '{}'", script.string(), (dir / "in.json").string(), (dir / "out.json").string());
  REQUIRE(std::system(cmd.c_str()) == 0);
  json out;
  std::ifstream(dir / "out.json") >> out;
  std::filesystem::remove_all(dir);
  return out;
}

void check_against_reference(const Config& s, const Overlaps& o, double t_max, const std::string& tag) {
  const std::vector<double> times = lin_spaced(0.0, t_max, 21);
  const json ref = reference(s, o, times, 0.02, tag);
  const CommitteeODE ode(s);
  IntegrateOptions opt;
  opt.rtol = 1e-10;
  opt.atol = 1e-12;
  std::size_t j = 0;
  double worst = 0, eg_start = 0, eg_end = 0;
  const auto summary = integrate([&](const ConstVecRef& x, VecRef dx, double t) { ode(x, dx, t); }, pack(s, o), 0.0, times,
                                 [&](double, const Eigen::VectorXd& x) {
                                   const Overlaps h = unpack(s, x);
                                   const double dq = (h.Q - matrix_from(ref["Q"][j])).lpNorm<Eigen::Infinity>();
                                   const double dr = (h.R - matrix_from(ref["R"][j])).lpNorm<Eigen::Infinity>();
                                   double dv = 0;
                                   for (int k = 0; k < s.K; ++k) dv = std::max(dv, std::fabs(h.v(k) - ref["v"][j][k].get<double>()));
                                   const double eg = ode.generalisation_error(x), deg = std::fabs(eg - ref["eg"][j].get<double>()) / eg;
                                   worst = std::max({worst, dq, dr, dv, deg});
                                   if (j == 0) eg_start = eg;
                                   eg_end = eg;
                                   ++j;
                                   return true;
                                 },
                                 opt);
  REQUIRE(summary.ok());
  REQUIRE(j == times.size());
  CAPTURE(tag);
  MESSAGE(fmt::format("{}: eg {:.4g} -> {:.4g} over t in [0, {}]; largest |hdat - reference| = {:.2e} ({})", tag, eg_start, eg_end, t_max,
                      worst, summary.brief()));
  CHECK(worst < 1e-6);
  // A non-trivial run: the error moved by a large factor.
  CHECK(eg_end < 0.5 * eg_start);
}

}  // namespace

TEST_CASE("the curve agrees with an independent NumPy implementation (Saad-Solla forms, RK4) on given initial overlaps") {
  {
    // erf, every term, through the plateau and the specialisation.
    Config s = committee_test::setup(2, 2);
    s.eta = 1.0;
    s.eta_v = 0.5;
    s.train_v = true;
    s.noise = 0.2;
    s.wd = 0.005;
    s.vstar << 1.0, 0.8;
    Overlaps o;
    o.Q.resize(2, 2);
    o.Q << 0.30, 0.02, 0.02, 0.25;
    o.R.resize(2, 2);
    o.R << 0.05, 0.01, 0.00, 0.04;
    o.T = Eigen::MatrixXd::Identity(2, 2);
    o.v = Eigen::Vector2d(0.9, 1.1);
    check_against_reference(s, o, 60.0, "erf K=M=2 all terms");
  }
  {
    // erf, over-parameterised K = 3 > M = 2, Gaussian-like teacher overlaps T != I.
    Config s = committee_test::setup(3, 2);
    s.eta = 0.5;
    const Overlaps o = committee_test::random_overlaps(s, 3);
    check_against_reference(s, o, 40.0, "erf K=3 M=2");
  }
  {
    // linear, K = 2 < M = 3, second layer trained, label noise.
    Config s = committee_test::setup(2, 3, Activation::linear);
    s.eta = 0.3;
    s.eta_v = 0.2;
    s.train_v = true;
    s.noise = 0.3;
    const Overlaps o = committee_test::random_overlaps(s, 4);
    check_against_reference(s, o, 30.0, "linear K=2 M=3");
  }
}
