#pragma once
// Layer normalization over the last dimension on the CPU (float32).
//
// Forward, per row r of x [rows, cols]:
//   mean[r] = avg_c x[r,c],  rstd[r] = 1 / sqrt(avg_c (x[r,c] - mean[r])^2 + eps)
//   y[r,c]  = (x[r,c] - mean[r]) * rstd[r] * gamma[c] + beta[c]
// mean and rstd [rows] are kept for the backward pass.
//
// Backward: dx [rows, cols] is overwritten; dgamma and dbeta [cols] ACCUMULATE (+=), so the
// gradients of several micro-batches add up without a separate sum.

#include <cstdint>

namespace tandem::kernels::cpu {

void layer_norm_forward(const float* x, const float* gamma, const float* beta, std::int64_t rows,
                        std::int64_t cols, float eps, float* y, float* mean, float* rstd);

void layer_norm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                         const float* rstd, std::int64_t rows, std::int64_t cols, float* dx,
                         float* dgamma, float* dbeta);

}  // namespace tandem::kernels::cpu
