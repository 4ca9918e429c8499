#pragma once
// Layer normalization over the last dimension on a CUDA stream.
//
// Same contract as kernels/cpu/layer_norm.h: per row r of x [rows, cols],
//   mean[r] = avg_c x[r,c],  rstd[r] = 1 / sqrt(avg_c (x[r,c] - mean[r])^2 + eps)
//   y[r,c]  = (x[r,c] - mean[r]) * rstd[r] * gamma[c] + beta[c]
// Backward overwrites dx [rows, cols]; dgamma and dbeta [cols] ACCUMULATE (+=).
//
// Storage: x, gamma, beta, y, dy, dx, dgamma, dbeta are float or bf16 (all the same);
// mean and rstd stay float. Sums run in float; the dgamma/dbeta column sums are deterministic
// (no atomics). Throws std::runtime_error when a launch fails.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void layer_norm_forward(const float* x, const float* gamma, const float* beta, std::int64_t rows,
                        std::int64_t cols, float eps, float* y, float* mean, float* rstd,
                        cudaStream_t stream);
void layer_norm_forward(const __nv_bfloat16* x, const __nv_bfloat16* gamma,
                        const __nv_bfloat16* beta, std::int64_t rows, std::int64_t cols, float eps,
                        __nv_bfloat16* y, float* mean, float* rstd, cudaStream_t stream);

void layer_norm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                         const float* rstd, std::int64_t rows, std::int64_t cols, float* dx,
                         float* dgamma, float* dbeta, cudaStream_t stream);
void layer_norm_backward(const __nv_bfloat16* dy, const __nv_bfloat16* x,
                         const __nv_bfloat16* gamma, const float* mean, const float* rstd,
                         std::int64_t rows, std::int64_t cols, __nv_bfloat16* dx,
                         __nv_bfloat16* dgamma, __nv_bfloat16* dbeta, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
