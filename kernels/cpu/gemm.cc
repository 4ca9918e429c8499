#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include <limits>
#include <stdexcept>
#include <string>

namespace tandem::kernels::cpu {
namespace {

blasint to_blas(std::int64_t value, const char* name) {
  if (value < 0 || value > std::numeric_limits<blasint>::max()) {
    throw std::invalid_argument(std::string("gemm: ") + name + " = " + std::to_string(value) +
                                " is outside the BLAS integer range");
  }
  return static_cast<blasint>(value);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // BLAS leaves this corner loosely specified; an empty product is beta * C (0 when beta = 0).
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, to_blas(m, "m"), to_blas(n, "n"),
              to_blas(k, "k"), alpha, a, to_blas(lda, "lda"), b, to_blas(ldb, "ldb"), beta, c,
              to_blas(ldc, "ldc"));
}

}  // namespace tandem::kernels::cpu
