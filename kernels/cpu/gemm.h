#pragma once
// General matrix multiply on the CPU (float32, OpenBLAS sgemm underneath).
//
//   C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n]
//
// All matrices are row-major; op(X) is X or X^T as trans_* says, so A is stored [m,k] (or [k,m]
// when trans_a) and B [k,n] (or [n,k] when trans_b). lda/ldb/ldc are the elements between
// consecutive stored rows. beta = 1 accumulates into C (weight gradients over micro-batches);
// beta = 0 overwrites C without reading it. Throws std::invalid_argument when a size does not fit
// the BLAS integer type.

#include <cstdint>

namespace tandem::kernels::cpu {

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);

}  // namespace tandem::kernels::cpu
