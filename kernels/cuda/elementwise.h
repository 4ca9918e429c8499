#pragma once
// Elementwise helpers on a CUDA stream, over n contiguous elements (same contract as
// kernels/cpu/elementwise.h):
//   add         out = a + b    (residual connections; out may alias a or b)
//   scale       x *= alpha     (in place: loss scaling, gradient averaging)
//   accumulate  y += x         (gradient accumulation)
// Storage: float or bf16 (all operands the same), computed in float.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void add(const float* a, const float* b, float* out, std::int64_t n, cudaStream_t stream);
void add(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, std::int64_t n,
         cudaStream_t stream);

void scale(float* x, float alpha, std::int64_t n, cudaStream_t stream);
void scale(__nv_bfloat16* x, float alpha, std::int64_t n, cudaStream_t stream);

void accumulate(const float* x, float* y, std::int64_t n, cudaStream_t stream);
void accumulate(const __nv_bfloat16* x, __nv_bfloat16* y, std::int64_t n, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
