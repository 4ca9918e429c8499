#pragma once
// The CPU AdamW loop as it was before session 11 vectorised and threaded it (kernels/cpu/adamw.h),
// kept scalar: GCC may not vectorise this function, and its sqrt keeps errno (the branch that had
// blocked vectorisation). The reference of the kernel's bit-identity test and the baseline of
// tests/bench/adam_bench.cc.
#include <cmath>
#include <cstdint>

namespace tandem::kernels::test {

__attribute__((optimize("no-tree-vectorize"))) inline void scalar_adamw(
    float* param, const float* grad, float* m, float* v, std::int64_t n, float lr, float beta1, float beta2,
    float eps, float weight_decay, std::int64_t step) {
  const double s = static_cast<double>(step);
  const float bias1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), s));
  const float bias2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), s));
  const float step_size = lr / bias1;
  const float inv_sqrt_bias2 = 1.0f / std::sqrt(bias2);
  const float decay = 1.0f - lr * weight_decay;
  for (std::int64_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1.0f - beta1) * grad[i];
    v[i] = beta2 * v[i] + (1.0f - beta2) * grad[i] * grad[i];
    param[i] = param[i] * decay - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bias2 + eps);
  }
}

}  // namespace tandem::kernels::test
