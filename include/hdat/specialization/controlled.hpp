#pragma once
// The specialization model's controllable parameter for `hdat optimize` (hdat/core/control.hpp): the
// learning rate η over time. Its drift and risk are the flow's own (ode.hpp), on the same fixed sample
// set, with exact derivatives (OrderParameterFlow::drift_derivatives, risk_gradient).
#include <memory>

#include "hdat/core/control.hpp"
#include "hdat/specialization/ode.hpp"

namespace hdat::specialization {

class SpecializationControlled final : public ControlledTheory {
 public:
  SpecializationControlled(const Config& setup, const FlowOptions& options);
  const StateLayout& layout() const override { return flow_.layout(); }
  const std::vector<ControlSpec>& controls() const override { return controls_; }
  Eigen::VectorXd defaults() const override { return Eigen::VectorXd::Constant(1, flow_.setup().eta); }
  void drift(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd& f, Eigen::MatrixXd* f_x,
             Eigen::MatrixXd* f_u) const override;
  std::string risk_name() const override { return "risk"; }
  double risk(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd* r_x, Eigen::VectorXd* r_u) const override;
  const OrderParameterFlow& flow() const { return flow_; }

 private:
  OrderParameterFlow flow_;
  std::vector<ControlSpec> controls_;
};

}  // namespace hdat::specialization
