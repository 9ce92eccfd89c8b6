#include "hdat/committee/model.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "hdat/core/error.hpp"

namespace hdat::committee {

Activation activation_from(const std::string& name) {
  if (name == "erf") return Activation::erf;
  if (name == "linear") return Activation::linear;
  throw InputError("activation", "expected erf|linear, got '" + name + "'");
}

std::string activation_name(Activation a) { return a == Activation::erf ? "erf" : "linear"; }

Config Config::defaults(int K, int M) {
  Config s;
  s.K = K;
  s.M = M;
  s.vstar = Eigen::VectorXd::Ones(M);
  s.v0 = Eigen::VectorXd::Ones(K);
  return s;
}

StateLayout Config::layout() const {
  StateLayout l;
  l.add("Q", K, K, /*symmetric=*/true).add("R", K, M).add("T", M, M, /*symmetric=*/true);
  if (train_v) l.add("v", K, 1);
  return l;
}

std::vector<std::string> Config::active_terms() const {
  std::vector<std::string> t = {"eta_linear", "eta_squared"};
  if (noise > 0) t.push_back("label_noise");
  if (wd != 0) t.push_back("weight_decay");
  if (train_v) t.push_back("second_layer");
  return t;
}

void Config::validate() const {
  if (K < 1 || M < 1) throw std::invalid_argument("committee::Config: K and M must be at least 1");
  if (vstar.size() != M) throw std::invalid_argument(fmt::format("committee::Config: vstar has {} entries, M = {}", vstar.size(), M));
  if (v0.size() != K) throw std::invalid_argument(fmt::format("committee::Config: v0 has {} entries, K = {}", v0.size(), K));
  if (N < 1) throw std::invalid_argument("committee::Config: N must be positive");
  bool known = broken_term == "none";
  for (const auto& t : term_names()) known = known || broken_term == t;
  if (!known) throw std::invalid_argument("committee::Config: unknown broken_term '" + broken_term + "'");
}

Eigen::VectorXd pack(const Config& s, const Overlaps& o) {
  const StateLayout l = s.layout();
  Eigen::VectorXd x(l.size());
  l.view(x, "Q") = o.Q;
  l.view(x, "R") = o.R;
  l.view(x, "T") = o.T;
  if (s.train_v) l.view(x, "v") = o.v;
  return x;
}

Overlaps unpack(const Config& s, const Eigen::VectorXd& x) {
  const StateLayout l = s.layout();
  Overlaps o;
  o.Q = l.view(x, "Q");
  o.R = l.view(x, "R");
  o.T = l.view(x, "T");
  o.v = s.train_v ? Eigen::VectorXd(l.view(x, "v")) : s.v0;
  return o;
}

void field_covariance(const Eigen::MatrixXd& Q, const Eigen::MatrixXd& R, const Eigen::MatrixXd& T, Eigen::MatrixXd& C) {
  const Eigen::Index K = Q.rows(), M = T.rows();
  C.resize(K + M, K + M);
  C.topLeftCorner(K, K) = Q;
  C.topRightCorner(K, M) = R;
  C.bottomLeftCorner(M, K) = R.transpose();
  C.bottomRightCorner(M, M) = T;
}

Eigen::VectorXd readout_signs(const Eigen::VectorXd& v, const Eigen::VectorXd& vstar) {
  Eigen::VectorXd s(v.size() + vstar.size());
  s << -v, vstar;
  return s;
}

}  // namespace hdat::committee
