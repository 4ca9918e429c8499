#include "kernels/cpu/split_layer_norm.h"

#include <cmath>

namespace tandem::kernels::cpu {

void layer_norm_partial_mean(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t full_cols,
                             float* mean) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += x[r * cols + c];
    mean[r] = sum / static_cast<float>(full_cols);
  }
}

void layer_norm_partial_var(const float* x, const float* mean, std::int64_t rows, std::int64_t cols,
                            std::int64_t full_cols, float* var) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float sq = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float d = x[r * cols + c] - mean[r];
      sq += d * d;
    }
    var[r] = sq / static_cast<float>(full_cols);
  }
}

void layer_norm_apply(const float* x, const float* gamma, const float* beta, const float* mean, const float* var,
                      std::int64_t rows, std::int64_t cols, float eps, float* y, float* rstd) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float rs = 1.0f / std::sqrt(var[r] + eps);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = (x[r * cols + c] - mean[r]) * rs * gamma[c] + beta[c];
    rstd[r] = rs;
  }
}

void layer_norm_bwd_partial_sums(const float* dy, const float* x, const float* gamma, const float* mean,
                                 const float* rstd, std::int64_t rows, std::int64_t cols, std::int64_t full_cols,
                                 float* sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float sum_g = 0.0f, sum_g_xhat = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float g = dy[r * cols + c] * gamma[c];
      sum_g += g;
      sum_g_xhat += g * (x[r * cols + c] - mean[r]) * rstd[r];
    }
    sums[2 * r] = sum_g / static_cast<float>(full_cols);
    sums[2 * r + 1] = sum_g_xhat / static_cast<float>(full_cols);
  }
}

void layer_norm_bwd_apply(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                          const float* sums, std::int64_t rows, std::int64_t cols, float* dx, float* dgamma,
                          float* dbeta) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float rs = rstd[r];
    for (std::int64_t c = 0; c < cols; ++c) {
      const float d = dy[r * cols + c];
      const float xhat = (x[r * cols + c] - mean[r]) * rs;
      dx[r * cols + c] = rs * (d * gamma[c] - sums[2 * r] - xhat * sums[2 * r + 1]);
      dgamma[c] += d * xhat;
      dbeta[c] += d;
    }
  }
}

}  // namespace tandem::kernels::cpu
