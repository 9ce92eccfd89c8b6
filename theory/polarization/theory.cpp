#include "hdat/polarization/theory.hpp"

#include "hdat/core/harness.hpp"
#include "hdat/polarization/curve.hpp"
#include "hdat/polarization/observables.hpp"

namespace hdat::polarization {

Observables compared_observables(const Observables& all) {
  Observables out;
  for (const char* name : {"loss", "V_norm"}) out.add(name, all[name].value);
  return out;
}

FlowTheory::FlowTheory(const Config& c) : config_(c), instance_(make_instance(config_)), flow_(make_flow(config_, instance_)) {}

void FlowTheory::operator()(const ConstVecRef& x, VecRef dxdt, double) const { flow_->rhs(x, dxdt); }

Observables FlowTheory::table_observables(const Eigen::VectorXd& x, double t) const {
  return besides_blocks(all_observables(config_, t, flow_->measure(x)), flow_->layout());
}

Observables FlowTheory::observe(const Eigen::VectorXd& x, double t) const { return compared_observables(table_observables(x, t)); }

TheoryRun FlowTheory::run(const Eigen::VectorXd& x0, const std::vector<double>& times, const IntegrateOptions& options) const {
  const FlowResult r = integrate_flow(config_, *flow_, x0, times, options);
  const StateLayout& layout = flow_->layout();
  TheoryRun out{Trajectory(layout, table_observables(x0, times.front())), r.summary, x0, x0, flow_info(config_, *flow_, r)};
  for (std::size_t k = 0; k < r.t.size(); ++k) out.trajectory.append(r.t[k], table_observables(r.x[k], r.t[k]), r.x[k]);
  if (!r.x.empty()) out.final = r.x.back();
  return out;
}

}  // namespace hdat::polarization
