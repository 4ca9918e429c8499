#pragma once
// RMS normalization over the last dimension on the CPU (float32).
//
// Forward, per row r of x [rows, cols]:
//   rstd[r] = 1 / sqrt(avg_c x[r,c]^2 + eps),  y[r,c] = x[r,c] * rstd[r] * gamma[c]
// rstd [rows] is kept for the backward pass.
//
// Backward: dx [rows, cols] is overwritten; dgamma [cols] ACCUMULATES (+=).

#include <cstdint>

namespace tandem::kernels::cpu {

void rms_norm_forward(const float* x, const float* gamma, std::int64_t rows, std::int64_t cols,
                      float eps, float* y, float* rstd);

void rms_norm_backward(const float* dy, const float* x, const float* gamma, const float* rstd,
                       std::int64_t rows, std::int64_t cols, float* dx, float* dgamma);

}  // namespace tandem::kernels::cpu
