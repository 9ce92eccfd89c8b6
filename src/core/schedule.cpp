#include "hdat/core/schedule.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/math/quadrature/gauss.hpp>
#include <cmath>
#include <filesystem>
#include <numbers>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"

namespace hdat {

namespace {

struct ShapeInfo {
  ScheduleShape shape;
  const char* name;
  std::vector<std::string> params;  // empty: piecewise (u_0, u_1, ...)
};

const std::vector<ShapeInfo>& shapes() {
  static const std::vector<ShapeInfo> s = {{ScheduleShape::piecewise_constant, "piecewise_constant", {}},
                                           {ScheduleShape::piecewise_linear, "piecewise_linear", {}},
                                           {ScheduleShape::step_decay, "step_decay", {"start", "factor"}},
                                           {ScheduleShape::cosine, "cosine", {"start", "end"}},
                                           {ScheduleShape::power_law, "power_law", {"start", "exponent", "scale"}}};
  return s;
}

const ShapeInfo& info(ScheduleShape s) {
  for (const auto& i : shapes())
    if (i.shape == s) return i;
  throw std::logic_error("unknown schedule shape");
}

bool piecewise(ScheduleShape s) { return s == ScheduleShape::piecewise_constant || s == ScheduleShape::piecewise_linear; }

}  // namespace

std::string shape_name(ScheduleShape s) { return info(s).name; }

ScheduleShape shape_from_name(const std::string& name, const std::string& key) {
  std::string allowed;
  for (const auto& i : shapes()) {
    if (name == i.name) return i.shape;
    allowed += (allowed.empty() ? "" : "|") + std::string(i.name);
  }
  throw InputError(key, fmt::format("unknown schedule shape '{}' (allowed: {})", name, allowed));
}

std::vector<std::string> shape_parameter_names(ScheduleShape s, int size) {
  if (!piecewise(s)) return info(s).params;
  std::vector<std::string> out;
  for (int j = 0; j < size; ++j) out.push_back(fmt::format("u_{}", j));
  return out;
}

int ControlSchedule::intervals() const {
  if (shape == ScheduleShape::piecewise_constant) return static_cast<int>(theta.size());
  if (shape == ScheduleShape::piecewise_linear) return static_cast<int>(theta.size()) - 1;
  return 0;
}

namespace {
// The piece of a piecewise shape (or the stage of a step decay) that `where` lies in: [t_j, t_{j+1}).
int piece_of(double where, double t_final, int pieces) {
  const int j = static_cast<int>(std::floor(where / t_final * pieces));
  return std::clamp(j, 0, pieces - 1);
}
}  // namespace

double ControlSchedule::value(double t, double where) const {
  t = std::clamp(t, 0.0, t_final);
  where = std::clamp(where, 0.0, t_final);
  switch (shape) {
    case ScheduleShape::piecewise_constant: return theta(piece_of(where, t_final, intervals()));
    case ScheduleShape::piecewise_linear: {
      const int n = intervals(), j = piece_of(where, t_final, n);
      const double h = t_final / n, s = (t - j * h) / h;
      return (1 - s) * theta(j) + s * theta(j + 1);
    }
    case ScheduleShape::step_decay: return theta(0) * std::pow(theta(1), piece_of(where, t_final, drops + 1));
    case ScheduleShape::cosine: return theta(1) + (theta(0) - theta(1)) * 0.5 * (1 + std::cos(std::numbers::pi * t / t_final));
    case ScheduleShape::power_law: return theta(0) * std::pow(1 + t / theta(2), -theta(1));
  }
  return 0;
}

void ControlSchedule::gradient(double t, double where, Eigen::Ref<Eigen::VectorXd> g) const {
  t = std::clamp(t, 0.0, t_final);
  where = std::clamp(where, 0.0, t_final);
  g.setZero();
  switch (shape) {
    case ScheduleShape::piecewise_constant: g(piece_of(where, t_final, intervals())) = 1; break;
    case ScheduleShape::piecewise_linear: {
      const int n = intervals(), j = piece_of(where, t_final, n);
      const double h = t_final / n, s = (t - j * h) / h;
      g(j) = 1 - s;
      g(j + 1) = s;
      break;
    }
    case ScheduleShape::step_decay: {
      const int k = piece_of(where, t_final, drops + 1);
      g(0) = std::pow(theta(1), k);
      g(1) = k == 0 ? 0.0 : theta(0) * k * std::pow(theta(1), k - 1);
      break;
    }
    case ScheduleShape::cosine: {
      const double c = 0.5 * (1 + std::cos(std::numbers::pi * t / t_final));
      g(0) = c;
      g(1) = 1 - c;
      break;
    }
    case ScheduleShape::power_law: {
      const double base = 1 + t / theta(2), u = theta(0) * std::pow(base, -theta(1));
      g(0) = std::pow(base, -theta(1));
      g(1) = -u * std::log(base);
      g(2) = u * theta(1) * t / (theta(2) * theta(2) * base);  // ∂/∂scale of (1 + t/scale)^(−β)
      break;
    }
  }
}

std::vector<double> ControlSchedule::breakpoints() const {
  const int pieces = piecewise(shape) ? intervals() : shape == ScheduleShape::step_decay ? drops + 1 : 1;
  std::vector<double> out;
  for (int j = 1; j < pieces; ++j) out.push_back(t_final * j / pieces);
  return out;
}

double ControlSchedule::mean(Eigen::VectorXd* grad) const {
  const Eigen::Index p = theta.size();
  if (grad) grad->setZero(p);
  if (shape == ScheduleShape::piecewise_constant) {
    if (grad) grad->setConstant(1.0 / p);
    return theta.mean();
  }
  if (shape == ScheduleShape::piecewise_linear) {  // the trapezoid rule is exact
    const int n = intervals();
    double sum = 0;
    for (int j = 0; j <= n; ++j) {
      const double w = (j == 0 || j == n) ? 0.5 / n : 1.0 / n;
      sum += w * theta(j);
      if (grad) (*grad)(j) = w;
    }
    return sum;
  }
  // The smooth pieces between breakpoints, by 30-point Gauss–Legendre.
  std::vector<double> edges = {0.0};
  for (double b : breakpoints()) edges.push_back(b);
  edges.push_back(t_final);
  using rule = boost::math::quadrature::gauss<double, 30>;
  double sum = 0;
  Eigen::VectorXd g(p);
  for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
    const double a = edges[k], b = edges[k + 1], mid = 0.5 * (a + b);
    sum += rule::integrate([&](double t) { return value(t, mid); }, a, b);
    if (grad)
      for (Eigen::Index i = 0; i < p; ++i)
        (*grad)(i) += rule::integrate(
            [&](double t) {
              gradient(t, mid, g);
              return g(i);
            },
            a, b);
  }
  if (grad) *grad /= t_final;
  return sum / t_final;
}

void ControlSchedule::check(const std::string& key) const {
  if (control.empty()) throw InputError(key, "a schedule entry has no `control`");
  if (!(t_final > 0) || !std::isfinite(t_final)) throw InputError(key, fmt::format("t_final must be a positive number, got {}", t_final));
  if (!theta.allFinite()) throw InputError(key, fmt::format("the schedule of '{}' has a value that is not a finite number", control));
  if (piecewise(shape)) {
    const int minimum = shape == ScheduleShape::piecewise_constant ? 1 : 2;
    if (theta.size() < minimum)
      throw InputError(key, fmt::format("a {} schedule of '{}' needs at least {} values", shape_name(shape), control, minimum));
    return;
  }
  if (theta.size() != static_cast<Eigen::Index>(info(shape).params.size()))
    throw InputError(key, fmt::format("a {} schedule of '{}' takes the parameters {}", shape_name(shape), control,
                                      fmt::join(info(shape).params, ", ")));
  if (shape == ScheduleShape::step_decay && drops < 1) throw InputError(key, "step_decay needs drops >= 1");
  if (shape == ScheduleShape::power_law && !(theta(2) > 0)) throw InputError(key, "power_law needs scale > 0");
}

const ControlSchedule* Schedule::find(const std::string& control) const {
  for (const auto& c : controls)
    if (c.control == control) return &c;
  return nullptr;
}

double Schedule::value(const std::string& control, double t, double fallback) const {
  const ControlSchedule* c = find(control);
  return c ? c->value(t) : fallback;
}

double Schedule::final_value(const std::string& name, double fallback) const {
  auto it = finals.find(name);
  return it == finals.end() ? fallback : it->second;
}

std::vector<double> Schedule::breakpoints() const {
  std::vector<double> out;
  for (const auto& c : controls)
    for (double b : c.breakpoints()) out.push_back(b);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end(), [](double a, double b) { return std::fabs(a - b) <= 1e-12 * std::max(1.0, std::fabs(a)); }),
            out.end());
  return out;
}

nlohmann::json Schedule::to_json() const {
  nlohmann::json j = {{"hdat_schedule", 1}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : controls) {
    nlohmann::json e = {{"control", c.control}, {"shape", shape_name(c.shape)}, {"t_final", c.t_final}};
    if (piecewise(c.shape)) {
      e["values"] = std::vector<double>(c.theta.data(), c.theta.data() + c.theta.size());
    } else {
      nlohmann::json params = nlohmann::json::object();
      const auto& names = info(c.shape).params;
      for (std::size_t k = 0; k < names.size(); ++k) params[names[k]] = c.theta(static_cast<Eigen::Index>(k));
      e["params"] = params;
      if (c.shape == ScheduleShape::step_decay) e["drops"] = c.drops;
    }
    list.push_back(e);
  }
  j["controls"] = list;
  j["final"] = nlohmann::json(finals);
  return j;
}

namespace {
double number_in(const nlohmann::json& j, const std::string& what, const std::string& key) {
  if (!j.is_number()) throw InputError(key, what + " must be a number");
  return j.get<double>();
}
}  // namespace

Schedule Schedule::from_json(const nlohmann::json& j, const std::string& key) {
  if (!j.is_object() || !j.contains("controls") || !j["controls"].is_array())
    throw InputError(key, "a schedule is a JSON object with a list `controls` (as hdat optimize writes schedule.json)");
  Schedule s;
  for (const auto& e : j["controls"]) {
    if (!e.is_object() || !e.contains("control") || !e["control"].is_string() || !e.contains("shape") || !e["shape"].is_string())
      throw InputError(key, "each entry of `controls` needs a string `control` and a string `shape`");
    ControlSchedule c;
    c.control = e["control"].get<std::string>();
    if (s.find(c.control)) throw InputError(key, "'" + c.control + "' is scheduled twice");
    c.shape = shape_from_name(e["shape"].get<std::string>(), key);
    c.t_final = number_in(e.value("t_final", nlohmann::json()), "t_final of '" + c.control + "'", key);
    if (piecewise(c.shape)) {
      if (!e.contains("values") || !e["values"].is_array()) throw InputError(key, "the schedule of '" + c.control + "' needs `values`");
      c.theta.resize(static_cast<Eigen::Index>(e["values"].size()));
      for (std::size_t k = 0; k < e["values"].size(); ++k) c.theta(static_cast<Eigen::Index>(k)) = number_in(e["values"][k], "a value", key);
    } else {
      const auto& names = info(c.shape).params;
      if (!e.contains("params") || !e["params"].is_object())
        throw InputError(key, fmt::format("the {} schedule of '{}' needs `params` {}", shape_name(c.shape), c.control, fmt::join(names, ", ")));
      c.theta.resize(static_cast<Eigen::Index>(names.size()));
      for (std::size_t k = 0; k < names.size(); ++k) {
        if (!e["params"].contains(names[k])) throw InputError(key, fmt::format("the schedule of '{}' lacks `{}`", c.control, names[k]));
        c.theta(static_cast<Eigen::Index>(k)) = number_in(e["params"][names[k]], names[k], key);
      }
      if (c.shape == ScheduleShape::step_decay && e.contains("drops")) {
        if (!e["drops"].is_number_integer()) throw InputError(key, "drops must be an integer");
        c.drops = e["drops"].get<int>();
      }
    }
    c.check(key);
    s.controls.push_back(std::move(c));
  }
  if (j.contains("final")) {
    if (!j["final"].is_object()) throw InputError(key, "`final` must be an object {name: value}");
    for (const auto& [name, v] : j["final"].items()) s.finals[name] = number_in(v, "final value '" + name + "'", key);
  }
  return s;
}

Schedule schedule_from_value(const nlohmann::json& value, const std::string& key) {
  if (value.is_object()) return Schedule::from_json(value, key);
  if (!value.is_string()) throw InputError(key, "a path to a schedule.json (hdat optimize writes one) or the schedule as a JSON object");
  const std::filesystem::path path = value.get<std::string>();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(key, "no such file: " + path.string());
  const nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) throw InputError(key, "not valid JSON: " + path.string());
  return Schedule::from_json(j, key);
}

}  // namespace hdat
