#include "hdat/core/matrix_product.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <stdexcept>

#ifdef HDAT_HAVE_ONEDNN
#include <dnnl.h>
#endif

namespace hdat::linalg {

bool onednn_available() {
#ifdef HDAT_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

#ifdef HDAT_HAVE_ONEDNN
namespace onednn_product_detail {
namespace {
FloatMatrixView transposed(const FloatMatrixView& v) { return {v.data, v.cols, v.rows, v.ld, !v.row_major}; }

// Sets OpenMP's thread count for oneDNN to Eigen's for one call, then restores it: oneDNN reads
// omp_get_max_threads(), which hdat does not otherwise set (its models set Eigen's).
class ThreadsAsEigen {
 public:
  ThreadsAsEigen() : saved_(omp_get_max_threads()) { omp_set_num_threads(omp_in_parallel() ? 1 : Eigen::nbThreads()); }
  ~ThreadsAsEigen() { omp_set_num_threads(saved_); }
  ThreadsAsEigen(const ThreadsAsEigen&) = delete;
  ThreadsAsEigen& operator=(const ThreadsAsEigen&) = delete;

 private:
  int saved_;
};
}  // namespace
}  // namespace onednn_product_detail
#endif

bool onednn_product(const FloatMatrixView& A, const FloatMatrixView& B, float beta, float* c, Eigen::Index ldc,
                    bool c_row_major) {
#ifdef HDAT_HAVE_ONEDNN
  using namespace onednn_product_detail;
  // dnnl_sgemm is row-major; a column-major C is the row-major Cᵀ = Bᵀ Aᵀ.
  if (!c_row_major) return onednn_product(transposed(B), transposed(A), beta, c, ldc, true);
  // A column-major operand's memory is its transpose stored row-major: pass it with 'T'.
  const ThreadsAsEigen threads;
  const dnnl_status_t status = dnnl_sgemm(A.row_major ? 'N' : 'T', B.row_major ? 'N' : 'T', A.rows, B.cols, A.cols, 1.0f,
                                          A.data, A.ld, B.data, B.ld, beta, c, ldc);
  if (status != dnnl_success)
    throw std::runtime_error(fmt::format("oneDNN sgemm failed (status {}) on a {}x{} by {}x{} product", int(status), A.rows,
                                         A.cols, B.rows, B.cols));
  return true;
#else
  (void)A, (void)B, (void)beta, (void)c, (void)ldc, (void)c_row_major;
  return false;
#endif
}

}  // namespace hdat::linalg
