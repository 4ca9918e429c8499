#pragma once
// One AdamW step on the CPU (float32): Adam with decoupled weight decay (Loshchilov & Hutter,
// arXiv 1711.05101) and bias correction, in the order PyTorch's torch.optim.AdamW applies it:
//   param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * grad
//   v = beta2 * v + (1 - beta2) * grad^2
//   param -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + eps)
// step counts from 1 (the first update). param, m and v are updated in place; all are [n].
// Throws std::invalid_argument when step < 1.

#include <cstdint>

namespace tandem::kernels::cpu {

void adamw_step(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, std::int64_t step);

}  // namespace tandem::kernels::cpu
