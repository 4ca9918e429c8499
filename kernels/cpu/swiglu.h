#pragma once
// SwiGLU gate on the CPU (float32). x [rows, 2f] holds the gate half x[:, 0:f] and the linear half
// x[:, f:2f] side by side (the output of one fused up-projection):
//   y[r,j] = silu(x[r,j]) * x[r,f+j],  silu(a) = a * sigmoid(a),  y [rows, f]
// Backward overwrites dx [rows, 2f] (both halves) from dy [rows, f].

#include <cstdint>

namespace tandem::kernels::cpu {

void swiglu_forward(const float* x, std::int64_t rows, std::int64_t f, float* y);

void swiglu_backward(const float* x, const float* dy, std::int64_t rows, std::int64_t f, float* dx);

}  // namespace tandem::kernels::cpu
