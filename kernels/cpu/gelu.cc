#include "kernels/cpu/gelu.h"

#include <cmath>

namespace tandem::kernels::cpu {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

}  // namespace

void gelu_forward(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float u = kSqrt2OverPi * (x[i] + kCubic * x[i] * x[i] * x[i]);
    y[i] = 0.5f * x[i] * (1.0f + std::tanh(u));
  }
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float t = std::tanh(kSqrt2OverPi * (x[i] + kCubic * x[i] * x[i] * x[i]));
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x[i] * x[i]);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * x[i] * (1.0f - t * t) * du);
  }
}

}  // namespace tandem::kernels::cpu
