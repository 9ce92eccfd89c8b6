#include "hdat/committee/controlled.hpp"

#include <fmt/format.h>

#include "hdat/core/autodiff.hpp"
#include "hdat/core/error.hpp"

namespace hdat::committee {

namespace {
constexpr int kEta = 0, kKeep = 1, kScale = 2;
}

CommitteeControlled::CommitteeControlled(const Config& setup) : setup_(setup), layout_(setup.layout()) {
  setup_.validate();
  controls_ = {{"eta", false, Range::positive(), "first-layer learning rate"},
               {"dropout_keep", false, Range::between(0, 1), "dropout keep-probability r of each student unit"},
               {"test_scale", true, Range::nonnegative(), "p_f: the test-time scale of the student's output"}};
  if (layout_.size() + 2 > kMaxDirections)
    throw InputError("K", fmt::format("optimize differentiates the committee's {} state components and 2 controls exactly, at most {} "
                                      "together: take smaller K and M",
                                      layout_.size(), kMaxDirections));
}

Eigen::VectorXd CommitteeControlled::defaults() const {
  Eigen::VectorXd u(3);
  u << setup_.eta, setup_.dropout_keep, setup_.test_scale;
  return u;
}

void CommitteeControlled::drift(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd& f, Eigen::MatrixXd* f_x,
                                Eigen::MatrixXd* f_u) const {
  const int n = layout_.size();
  f.resize(n);
  if (!f_x && !f_u) {
    drift_by_index<double>(setup_, layout_, x.data(), u(kEta), u(kKeep), f.data());
    return;
  }
  // Forward differentiation along the n state directions, then η and r.
  const int dirs = n + 2;
  std::vector<Dual> xd(static_cast<std::size_t>(n)), fd(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) xd[k] = dual_variable(x(k), dirs, k);
  const Dual eta = dual_variable(u(kEta), dirs, n), r = dual_variable(u(kKeep), dirs, n + 1);
  drift_by_index<Dual>(setup_, layout_, xd.data(), eta, r, fd.data());
  if (f_x) f_x->resize(n, n);
  if (f_u) f_u->setZero(n, static_cast<Eigen::Index>(controls_.size()));
  for (int i = 0; i < n; ++i) {
    f(i) = fd[i].value();
    const Derivatives& d = fd[i].derivatives();
    const bool constant = d.size() == 0;  // an entry that depends on nothing (dT = 0)
    if (f_x) f_x->row(i) = constant ? Eigen::RowVectorXd::Zero(n) : Eigen::RowVectorXd(d.head(n).transpose());
    if (f_u && !constant) {
      (*f_u)(i, kEta) = d(n);
      (*f_u)(i, kKeep) = d(n + 1);
    }
  }
}

double CommitteeControlled::risk(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd* r_x, Eigen::VectorXd* r_u) const {
  const int n = layout_.size();
  if (!r_x && !r_u) return test_error_by_index<double>(setup_, layout_, x.data(), u(kScale));
  const int dirs = n + 1;
  std::vector<Dual> xd(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) xd[k] = dual_variable(x(k), dirs, k);
  const Dual e = test_error_by_index<Dual>(setup_, layout_, xd.data(), dual_variable(u(kScale), dirs, n));
  if (r_x) *r_x = e.derivatives().head(n);
  if (r_u) {
    r_u->setZero(static_cast<Eigen::Index>(controls_.size()));
    (*r_u)(kScale) = e.derivatives()(n);
  }
  return e.value();
}

}  // namespace hdat::committee
