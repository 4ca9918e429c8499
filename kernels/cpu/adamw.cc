#include "kernels/cpu/adamw.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tandem::kernels::cpu {
namespace {

struct AdamwScalars {
  float beta1, beta2, one_minus_beta1, one_minus_beta2, step_size, inv_sqrt_bias2, eps, decay;
};

// Elements [begin, end): the loop the compiler vectorises (restrict pointers, no branch; sqrt is
// compiled with -fno-math-errno, exact for the non-negative v).
void adamw_range(float* __restrict param, const float* __restrict grad, float* __restrict m,
                 float* __restrict v, std::int64_t begin, std::int64_t end, const AdamwScalars& k) {
  const float beta1 = k.beta1, beta2 = k.beta2, c1 = k.one_minus_beta1, c2 = k.one_minus_beta2;
  const float step_size = k.step_size, inv_sqrt_bias2 = k.inv_sqrt_bias2, eps = k.eps, decay = k.decay;
  for (std::int64_t i = begin; i < end; ++i) {
    const float g = grad[i];
    const float mi = beta1 * m[i] + c1 * g;
    const float vi = beta2 * v[i] + c2 * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bias2 + eps);
  }
}

}  // namespace

void adamw_step(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, std::int64_t step,
                int threads) {
  if (step < 1)
    throw std::invalid_argument("adamw_step: step must be >= 1, got " + std::to_string(step));
  // Bias corrections in double: beta2^step sits close to 1 for many steps.
  const double s = static_cast<double>(step);
  const float bias1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), s));
  const float bias2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), s));
  const AdamwScalars k{beta1,       beta2, 1.0f - beta1, 1.0f - beta2, lr / bias1, 1.0f / std::sqrt(bias2),
                       eps,         1.0f - lr * weight_decay};
  const std::int64_t t =
      std::max<std::int64_t>(1, std::min<std::int64_t>(threads, n / kAdamwMinPerThread));
  if (t == 1) {
    adamw_range(param, grad, m, v, 0, n, k);
    return;
  }
  // Contiguous ranges, each a multiple of 16 elements but the last (whole cache lines of floats).
  const std::int64_t per = (n / t + 15) / 16 * 16;
  std::vector<std::thread> pool;
  pool.reserve(std::size_t(t - 1));
  for (std::int64_t j = 1; j < t; ++j) {
    const std::int64_t b = std::min(n, j * per), e = std::min(n, (j + 1) * per);
    if (b < e) pool.emplace_back([=, &k] { adamw_range(param, grad, m, v, b, j + 1 == t ? n : e, k); });
  }
  adamw_range(param, grad, m, v, 0, std::min(n, per), k);
  for (auto& th : pool) th.join();
}

}  // namespace tandem::kernels::cpu
