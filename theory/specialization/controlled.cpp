#include "hdat/specialization/controlled.hpp"

namespace hdat::specialization {

SpecializationControlled::SpecializationControlled(const Config& setup, const FlowOptions& options) : flow_(setup, options) {
  controls_ = {{"eta", false, Range::positive(), "learning rate of the keys"}};
}

void SpecializationControlled::drift(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd& f, Eigen::MatrixXd* f_x,
                                     Eigen::MatrixXd* f_u) const {
  if (!f_x && !f_u) {
    f.resize(x.size());
    const StateLayout& l = flow_.layout();
    const Eigen::MatrixXd M = l.view(x, "M");
    const Eigen::MatrixXd R = 0.5 * (l.view(x, "R") + l.view(x, "R").transpose());
    const FlowTerms t = flow_.terms_at(M, R, flow_.setup().bias_in(x), false, u(0));
    l.view(f, "M") = t.dM;
    l.view(f, "R") = t.dR_drift + t.dR_noise;
    if (flow_.setup().train_bias) l.view(f, "b") = t.db;
    return;
  }
  Eigen::VectorXd f_eta;
  flow_.drift_derivatives(x, u(0), f, f_x, f_u ? &f_eta : nullptr);
  if (f_u) *f_u = f_eta;
}

double SpecializationControlled::risk(const Eigen::VectorXd& x, const Eigen::VectorXd&, Eigen::VectorXd* r_x, Eigen::VectorXd* r_u) const {
  if (r_u) r_u->setZero(1);
  if (!r_x) {
    const StateLayout& l = flow_.layout();
    return flow_.risk(l.view(x, "M"), l.view(x, "R"), flow_.setup().bias_in(x)).first;
  }
  return flow_.risk_gradient(x, r_x);
}

}  // namespace hdat::specialization
