#include "kernels/cpu/adamw.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace tandem::kernels::cpu {

void adamw_step(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, std::int64_t step) {
  if (step < 1)
    throw std::invalid_argument("adamw_step: step must be >= 1, got " + std::to_string(step));
  // Bias corrections in double: beta2^step sits close to 1 for many steps.
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

}  // namespace tandem::kernels::cpu
