#pragma once
// General matrix multiply on a CUDA stream through cuBLAS (cublasGemmEx, float accumulation).
//
//   C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n]
//
// Same contract as kernels/cpu/gemm.h: row-major matrices, op(X) = X or X^T as trans_* says,
// lda/ldb/ldc = elements between consecutive stored rows, beta = 1 accumulates into C (weight
// gradients over micro-batches), beta = 0 overwrites C without reading it; k >= 1. Row-major is
// obtained by handing cuBLAS the column-major product C^T = op(B)^T op(A)^T.
//
// Storage: float, bf16, or bf16 inputs with a float C (gradients accumulated in fp32); always
// CUBLAS_COMPUTE_32F, so float GEMMs stay full fp32 unless the caller put the handle in
// CUBLAS_TF32_TENSOR_OP_MATH. The call leaves the handle bound to `stream`, in host pointer mode.
// Throws std::runtime_error on a cuBLAS failure, std::invalid_argument when a size exceeds int.

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
          std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
          std::int64_t ldb, float beta, float* c, std::int64_t ldc, cudaStream_t stream);

void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
          std::int64_t k, float alpha, const __nv_bfloat16* a, std::int64_t lda,
          const __nv_bfloat16* b, std::int64_t ldb, float beta, __nv_bfloat16* c, std::int64_t ldc,
          cudaStream_t stream);

void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
          std::int64_t k, float alpha, const __nv_bfloat16* a, std::int64_t lda,
          const __nv_bfloat16* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
          cudaStream_t stream);

}  // namespace tandem::kernels::cuda
