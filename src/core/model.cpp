#include "hdat/core/model.hpp"

#include <algorithm>
#include <cmath>

#include <stdexcept>

namespace hdat {

Observables& Observables::add(const std::string& name, double value) {
  names_.push_back(name);
  values_.push_back({value, 0.0});
  estimated_.push_back(false);
  return *this;
}

Observables& Observables::add(const std::string& name, double value, double se) {
  names_.push_back(name);
  values_.push_back({value, se});
  estimated_.push_back(true);
  return *this;
}

Observables& Observables::blocks_here() {
  blocks_at_ = names_.size();
  return *this;
}

bool Observables::has(const std::string& name) const {
  for (const auto& n : names_)
    if (n == name) return true;
  return false;
}

const Measured& Observables::operator[](const std::string& name) const {
  for (std::size_t k = 0; k < names_.size(); ++k)
    if (names_[k] == name) return values_[k];
  throw std::out_of_range("no observable '" + name + "'");
}

DriftTerms& DriftTerms::add(const std::string& name, Eigen::VectorXd value, Eigen::VectorXd se) {
  if (se.size() == 0) se = Eigen::VectorXd::Zero(value.size());
  if (se.size() != value.size() || (!values_.empty() && value.size() != values_.front().size()))
    throw std::logic_error("DriftTerms: term '" + name + "' has a different size");
  names_.push_back(name);
  values_.push_back(std::move(value));
  errors_.push_back(std::move(se));
  return *this;
}

Eigen::VectorXd DriftTerms::total() const {
  if (values_.empty()) return {};
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(values_.front().size());
  for (const auto& v : values_) sum += v;
  return sum;
}

DriftTerms OdeTheory::terms(const Eigen::VectorXd& x, double t) const {
  Eigen::VectorXd dxdt(x.size());
  (*this)(x, dxdt, t);
  DriftTerms terms;
  terms.add("drift", std::move(dxdt));
  return terms;
}

nlohmann::json FixedPointReport::to_json() const {
  return {{"converged", converged}, {"iterations", iterations}, {"residual", residual}, {"seconds", seconds}, {"message", message}};
}

int FixedPointRun::unconverged() const {
  return static_cast<int>(std::count_if(points.begin(), points.end(), [](const FixedPointSolution& s) { return !s.converged; }));
}

Table FixedPointRun::table(const std::string& control_name) const {
  std::vector<std::string> cols = {control_name};
  const Observables* first = points.empty() ? nullptr : &points.front().observables;
  if (first)
    for (std::size_t k = 0; k < first->size(); ++k) {
      cols.push_back(first->names()[k]);
      if (first->estimated(k)) cols.push_back(first->names()[k] + "_se");
    }
  cols.emplace_back("converged");
  Table t(cols);
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<Cell> row = {controls[i]};
    for (std::size_t k = 0; first && k < first->size(); ++k) {
      const Measured& m = points[i].observables[first->names()[k]];
      row.push_back(m.value);
      if (first->estimated(k)) row.push_back(m.se);
    }
    row.push_back(points[i].converged ? 1.0 : 0.0);
    t.add_row(row);
  }
  return t;
}

double FixedPoints::cost(double control, int size) const { return control * std::pow(double(size), 3); }

ParamSet& declare_break_term(ParamSet& set, const std::vector<std::string>& terms) {
  std::vector<std::string> choices = {"none"};
  choices.insert(choices.end(), terms.begin(), terms.end());
  return set
      .choice("break_term", "none", choices, "TESTING ONLY: break one term of the theory so that validate must disagree (none: the correct theory)")
      .theory_only();
}

}  // namespace hdat

#include "hdat/core/control.hpp"

namespace hdat {

int ControlledTheory::control_index(const std::string& name) const {
  const auto& c = controls();
  for (std::size_t k = 0; k < c.size(); ++k)
    if (c[k].name == name) return static_cast<int>(k);
  return -1;
}

}  // namespace hdat
