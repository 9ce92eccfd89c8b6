#pragma once
// Limited-memory BFGS with a backtracking (Armijo) line search, for the factorised training of W.
// Options in, Summary out. The objective writes its gradient and returns its value.
#include <Eigen/Dense>
#include <functional>
#include <string>

namespace hdat::tied_attention {

struct LbfgsOptions {
  int memory = 10;
  long max_iter = 20000;
  double rel_tol = 1e-10;   ///< stop when |f_k − f_{k−1}| <= rel_tol · max(1, |f|) for `patience` iterations
  double grad_tol = 1e-9;   ///< or when |∇f|_2 <= grad_tol · max(1, |f|)
  int patience = 5;
  double armijo = 1e-4;
};

struct LbfgsSummary {
  long iterations = 0, evaluations = 0;
  double f = 0, grad_norm = 0;
  bool converged = false;
  std::string message;
};

using Objective = std::function<double(const Eigen::VectorXd& x, Eigen::VectorXd& grad)>;

LbfgsSummary lbfgs_minimize(const Objective& f, Eigen::VectorXd& x, const LbfgsOptions& options = {});

}  // namespace hdat::tied_attention
