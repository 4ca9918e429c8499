#pragma once
// One AdamW step on a CUDA stream. Same contract as kernels/cpu/adamw.h (PyTorch AdamW order,
// decoupled weight decay, bias correction, step counted from 1):
//   param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * grad,  v = beta2 * v + (1 - beta2) * grad^2
//   param -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + eps)
// param (the fp32 master weights), m and v are float and updated in place; all arrays are [n].
//
// The mixed-precision variant reads a bf16 gradient and also writes the updated parameter,
// rounded to bf16, into param_bf16 (the working copy the next forward pass uses).
// The bf16-state variant keeps no master: param, m and v are bf16, the update is computed in float
// from their stored values and each is rounded to bf16 (nearest even) once when written.
// Throws std::invalid_argument when step < 1, std::runtime_error when a launch fails.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void adamw_step(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, std::int64_t step,
                cudaStream_t stream);

void adamw_step(float* param, const __nv_bfloat16* grad, float* m, float* v, std::int64_t n,
                float lr, float beta1, float beta2, float eps, float weight_decay,
                std::int64_t step, __nv_bfloat16* param_bf16, cudaStream_t stream);

void adamw_step(__nv_bfloat16* param, const __nv_bfloat16* grad, __nv_bfloat16* m, __nv_bfloat16* v,
                std::int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                std::int64_t step, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
