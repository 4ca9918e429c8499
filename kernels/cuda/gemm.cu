#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/gemm.h"

namespace tandem::kernels::cuda {
namespace {

void gemm_ex(cublasHandle_t handle, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
             std::int64_t k, float alpha, const void* a, cudaDataType_t ab_type, std::int64_t lda,
             const void* b, std::int64_t ldb, float beta, void* c, cudaDataType_t c_type,
             std::int64_t ldc, cudaStream_t stream) {
  using detail::check_cublas;
  using detail::to_int;
  if (m == 0 || n == 0) return;
  check_cublas(cublasSetStream(handle, stream), "gemm: cublasSetStream");
  check_cublas(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST),
               "gemm: cublasSetPointerMode");
  // Column-major cuBLAS sees each row-major matrix transposed, so row-major C = op(A) op(B) is
  // computed as C^T = op(B)^T op(A)^T: B goes first, with the n and m extents swapped.
  check_cublas(
      cublasGemmEx(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                   to_int(n, "gemm n"), to_int(m, "gemm m"), to_int(k, "gemm k"), &alpha, b,
                   ab_type, to_int(ldb, "gemm ldb"), a, ab_type, to_int(lda, "gemm lda"), &beta, c,
                   c_type, to_int(ldc, "gemm ldc"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "gemm: cublasGemmEx");
}

}  // namespace

void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
          std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
          std::int64_t ldb, float beta, float* c, std::int64_t ldc, cudaStream_t stream) {
  gemm_ex(handle, trans_a, trans_b, m, n, k, alpha, a, CUDA_R_32F, lda, b, ldb, beta, c, CUDA_R_32F,
          ldc, stream);
}

void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
          std::int64_t k, float alpha, const __nv_bfloat16* a, std::int64_t lda,
          const __nv_bfloat16* b, std::int64_t ldb, float beta, __nv_bfloat16* c, std::int64_t ldc,
          cudaStream_t stream) {
  gemm_ex(handle, trans_a, trans_b, m, n, k, alpha, a, CUDA_R_16BF, lda, b, ldb, beta, c,
          CUDA_R_16BF, ldc, stream);
}

void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
          std::int64_t k, float alpha, const __nv_bfloat16* a, std::int64_t lda,
          const __nv_bfloat16* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
          cudaStream_t stream) {
  gemm_ex(handle, trans_a, trans_b, m, n, k, alpha, a, CUDA_R_16BF, lda, b, ldb, beta, c,
          CUDA_R_32F, ldc, stream);
}

}  // namespace tandem::kernels::cuda
