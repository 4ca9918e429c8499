#pragma once
// RMS normalization over the last dimension on a CUDA stream.
//
// Same contract as kernels/cpu/rms_norm.h: per row r of x [rows, cols],
//   rstd[r] = 1 / sqrt(avg_c x[r,c]^2 + eps),  y[r,c] = x[r,c] * rstd[r] * gamma[c]
// Backward overwrites dx [rows, cols]; dgamma [cols] ACCUMULATES (+=).
//
// Storage: x, gamma, y, dy, dx, dgamma are float or bf16 (all the same); rstd stays float.
// Sums run in float; the dgamma column sum is deterministic (no atomics).
// Throws std::runtime_error when a launch fails.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void rms_norm_forward(const float* x, const float* gamma, std::int64_t rows, std::int64_t cols,
                      float eps, float* y, float* rstd, cudaStream_t stream);
void rms_norm_forward(const __nv_bfloat16* x, const __nv_bfloat16* gamma, std::int64_t rows,
                      std::int64_t cols, float eps, __nv_bfloat16* y, float* rstd,
                      cudaStream_t stream);

void rms_norm_backward(const float* dy, const float* x, const float* gamma, const float* rstd,
                       std::int64_t rows, std::int64_t cols, float* dx, float* dgamma,
                       cudaStream_t stream);
void rms_norm_backward(const __nv_bfloat16* dy, const __nv_bfloat16* x, const __nv_bfloat16* gamma,
                       const float* rstd, std::int64_t rows, std::int64_t cols, __nv_bfloat16* dx,
                       __nv_bfloat16* dgamma, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
