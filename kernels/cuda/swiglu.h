#pragma once
// SwiGLU gate on a CUDA stream. Same contract as kernels/cpu/swiglu.h: x [rows, 2f] holds the gate
// half x[:, 0:f] and the linear half x[:, f:2f];
//   y[r,j] = silu(x[r,j]) * x[r,f+j],  silu(a) = a * sigmoid(a),  y [rows, f]
// Backward overwrites dx [rows, 2f] (both halves) from dy [rows, f].
// Storage: float or bf16 (x, y, dy, dx all the same), computed in float.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void swiglu_forward(const float* x, std::int64_t rows, std::int64_t f, float* y,
                    cudaStream_t stream);
void swiglu_forward(const __nv_bfloat16* x, std::int64_t rows, std::int64_t f, __nv_bfloat16* y,
                    cudaStream_t stream);

void swiglu_backward(const float* x, const float* dy, std::int64_t rows, std::int64_t f, float* dx,
                     cudaStream_t stream);
void swiglu_backward(const __nv_bfloat16* x, const __nv_bfloat16* dy, std::int64_t rows,
                     std::int64_t f, __nv_bfloat16* dx, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
