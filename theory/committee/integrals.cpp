#include "hdat/committee/integrals.hpp"

namespace hdat::committee {

double I2(Activation g, const Eigen::MatrixXd& C, int a, int b) { return I2_of<double>(g, C, a, b); }
double J2(Activation g, const Eigen::MatrixXd& C, int a, int b) { return J2_of<double>(g, C, a, b); }
double I3(Activation g, const Eigen::MatrixXd& C, int a, int b, int c) { return I3_of<double>(g, C, a, b, c); }
double I4(Activation g, const Eigen::MatrixXd& C, int a, int b, int c, int d) { return I4_of<double>(g, C, a, b, c, d); }

double generalisation_error(Activation g, const Eigen::MatrixXd& C, const Eigen::VectorXd& s) {
  const int L = static_cast<int>(C.rows());
  if (g == Activation::linear) return 0.5 * s.dot(C * s);
  double sum = 0;
  for (int c = 0; c < L; ++c) {
    sum += s(c) * s(c) * I2(g, C, c, c);
    for (int d = c + 1; d < L; ++d) sum += 2 * s(c) * s(d) * I2(g, C, c, d);
  }
  return 0.5 * sum;
}

}  // namespace hdat::committee
