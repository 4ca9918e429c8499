#include "kernels/cpu/layer_norm.h"

#include <cmath>

namespace tandem::kernels::cpu {

void layer_norm_forward(const float* x, const float* gamma, const float* beta, std::int64_t rows,
                        std::int64_t cols, float eps, float* y, float* mean, float* rstd) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += xr[c];
    const float mu = sum / static_cast<float>(cols);
    // Two passes (mean, then squared deviations) avoid the cancellation of E[x^2] - E[x]^2.
    float sq = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sq += (xr[c] - mu) * (xr[c] - mu);
    const float rs = 1.0f / std::sqrt(sq / static_cast<float>(cols) + eps);
    for (std::int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void layer_norm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                         const float* rstd, std::int64_t rows, std::int64_t cols, float* dx,
                         float* dgamma, float* dbeta) {
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    float* dxr = dx + r * cols;
    const float mu = mean[r];
    const float rs = rstd[r];
    // With xhat = (x - mean) * rstd and g = dy * gamma:
    //   dx = rstd * (g - avg(g) - xhat * avg(g * xhat))
    float sum_g = 0.0f;
    float sum_g_xhat = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float g = dyr[c] * gamma[c];
      sum_g += g;
      sum_g_xhat += g * (xr[c] - mu) * rs;
    }
    const float avg_g = sum_g * inv_cols;
    const float avg_g_xhat = sum_g_xhat * inv_cols;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float xhat = (xr[c] - mu) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - avg_g - xhat * avg_g_xhat);
      dgamma[c] += dyr[c] * xhat;
      dbeta[c] += dyr[c];
    }
  }
}

}  // namespace tandem::kernels::cpu
