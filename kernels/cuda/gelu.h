#pragma once
// GeLU, tanh approximation (GPT-2, Megatron-LM), elementwise on a CUDA stream:
//   y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// Same contract as kernels/cpu/gelu.h; backward overwrites dx = dy * dy/dx at the forward input.
// Storage: float or bf16 (x, y, dy, dx all the same), computed in float.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void gelu_forward(const float* x, float* y, std::int64_t n, cudaStream_t stream);
void gelu_forward(const __nv_bfloat16* x, __nv_bfloat16* y, std::int64_t n, cudaStream_t stream);

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n, cudaStream_t stream);
void gelu_backward(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                   std::int64_t n, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
