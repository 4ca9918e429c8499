#include "kernels/cpu/rms_norm.h"

#include <cmath>

namespace tandem::kernels::cpu {

void rms_norm_forward(const float* x, const float* gamma, std::int64_t rows, std::int64_t cols,
                      float eps, float* y, float* rstd) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float sq = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sq += xr[c] * xr[c];
    const float rs = 1.0f / std::sqrt(sq / static_cast<float>(cols) + eps);
    for (std::int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * rs * gamma[c];
    rstd[r] = rs;
  }
}

void rms_norm_backward(const float* dy, const float* x, const float* gamma, const float* rstd,
                       std::int64_t rows, std::int64_t cols, float* dx, float* dgamma) {
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    float* dxr = dx + r * cols;
    const float rs = rstd[r];
    // With xhat = x * rstd and g = dy * gamma:  dx = rstd * (g - xhat * avg(g * xhat))
    float sum_g_xhat = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum_g_xhat += dyr[c] * gamma[c] * xr[c] * rs;
    const float avg_g_xhat = sum_g_xhat * inv_cols;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float xhat = xr[c] * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - xhat * avg_g_xhat);
      dgamma[c] += dyr[c] * xhat;
    }
  }
}

}  // namespace tandem::kernels::cpu
