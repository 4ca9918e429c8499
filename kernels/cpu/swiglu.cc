#include "kernels/cpu/swiglu.h"

#include <cmath>

namespace tandem::kernels::cpu {

void swiglu_forward(const float* x, std::int64_t rows, std::int64_t f, float* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* gate = x + r * 2 * f;
    const float* lin = gate + f;
    float* yr = y + r * f;
    for (std::int64_t j = 0; j < f; ++j) {
      const float sig = 1.0f / (1.0f + std::exp(-gate[j]));
      yr[j] = gate[j] * sig * lin[j];
    }
  }
}

void swiglu_backward(const float* x, const float* dy, std::int64_t rows, std::int64_t f,
                     float* dx) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* gate = x + r * 2 * f;
    const float* lin = gate + f;
    const float* dyr = dy + r * f;
    float* dgate = dx + r * 2 * f;
    float* dlin = dgate + f;
    for (std::int64_t j = 0; j < f; ++j) {
      const float sig = 1.0f / (1.0f + std::exp(-gate[j]));
      // silu'(a) = sigmoid(a) * (1 + a * (1 - sigmoid(a)))
      dgate[j] = dyr[j] * lin[j] * sig * (1.0f + gate[j] * (1.0f - sig));
      dlin[j] = dyr[j] * gate[j] * sig;
    }
  }
}

}  // namespace tandem::kernels::cpu
