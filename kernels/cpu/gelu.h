#pragma once
// GeLU, tanh approximation (GPT-2, Megatron-LM), elementwise on the CPU (float32):
//   y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// Backward overwrites dx = dy * dy/dx evaluated at the forward input x.

#include <cstdint>

namespace tandem::kernels::cpu {

void gelu_forward(const float* x, float* y, std::int64_t n);

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n);

}  // namespace tandem::kernels::cpu
