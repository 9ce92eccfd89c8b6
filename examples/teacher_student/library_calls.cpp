// Your own model through hdat's library calls, without the command line: resolve parameters, run the
// harness's curve and validate, read the typed results. Checks what must hold (exit 0 when it does):
//   1. the curve equals the closed form (linear_teacher_student.hpp) at every observed time;
//   2. validate agrees with the simulation at the given seeds, and disagrees with the eta^2 term broken.
// Arguments key=value set parameters of the model (e.g. `teacher_student_calls eta=1 seeds=16`);
// bad input is exit 2 with a message naming the key.
#include <fmt/format.h>

#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/harness.hpp"
#include "linear_teacher_student.hpp"

namespace {

hdat::Params parameters(const hdat::ModelEntry& model, int argc, char** argv, std::vector<std::pair<std::string, hdat::json>> extra) {
  std::vector<std::pair<std::string, hdat::json>> assignments = std::move(extra);
  for (int i = 1; i < argc; ++i) assignments.push_back(hdat::parse_assignment(argv[i]));
  return hdat::resolve_for(model, nullptr, assignments);  // the model's check included: InputError naming the key
}

}  // namespace

int main(int argc, char** argv) try {
  const hdat::ModelEntry model = teacher_student::entry();
  hdat::RunContext ctx;
  ctx.quiet = true;

  // 1. The curve from given overlaps against the closed form (no noise).
  const hdat::Params p = parameters(model, argc, argv, {{"noise", 0.0}, {"R0", hdat::json::array({{0.05, 0, 0}, {0, 0.05, 0}, {0, 0, 0.05}})},
                                                        {"Q0", hdat::json::array({{0.5, 0, 0}, {0, 0.5, 0}, {0, 0, 0.5}})}});
  const hdat::Bound bound(*model.dynamics, p);
  const hdat::RunOutput curve = hdat::dynamics_curve(bound, ctx);
  const auto config = teacher_student::Config::from(p);
  const hdat::StateLayout layout = config.layout();
  const Eigen::VectorXd x0 = bound.dynamics().initial_state(bound.theory(0));
  const hdat::Table& rows = curve.tables.at("curve.csv");
  double worst = 0;
  for (std::size_t r = 0; r < rows.rows(); ++r) {
    std::vector<double> values;
    for (const auto& c : layout.columns()) values.push_back(rows.number(r, c));
    const Eigen::VectorXd exact = teacher_student::closed_form(config, x0, rows.number(r, "t"));
    worst = std::max(worst, (layout.from_values(values) - exact).cwiseAbs().maxCoeff());
  }
  fmt::print("curve: {} times to t = {:g}, largest deviation from the closed form {:.2e}\n", rows.rows(), rows.number(rows.rows() - 1, "t"), worst);
  const bool curve_ok = worst < 1e-6;

  // 2. validate, right and with a term broken.
  const std::vector<std::pair<std::string, hdat::json>> small = {{"dims", {200, 400}}, {"seeds", 12}, {"t_max", 4.0}, {"n_points", 12}};
  auto validate = [&](std::vector<std::pair<std::string, hdat::json>> sets) {
    sets.insert(sets.end(), small.begin(), small.end());
    const hdat::RunOutput out = hdat::dynamics_validate(*model.dynamics, parameters(model, argc, argv, sets), ctx);
    fmt::print("{}", out.summary);
    return out.exit_code;
  };
  const int right = validate({});
  const int broken = validate({{"break_term", "eta2"}});
  fmt::print("validate: exit {} (right theory), {} (eta2 broken)\n", right, broken);
  const bool ok = curve_ok && right == hdat::code(hdat::ExitCode::ok) && broken == hdat::code(hdat::ExitCode::disagree);
  fmt::print("{}\n", ok ? "all checks hold" : "A CHECK FAILS");
  return ok ? 0 : 1;
} catch (const hdat::InputError& e) {
  fmt::print(stderr, "teacher_student_calls: {}\n", e.what());
  return hdat::code(hdat::ExitCode::bad_input);
}
