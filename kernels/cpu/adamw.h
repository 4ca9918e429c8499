#pragma once
// One AdamW step on the CPU (float32): Adam with decoupled weight decay (Loshchilov & Hutter,
// arXiv 1711.05101) and bias correction, in the order PyTorch's torch.optim.AdamW applies it:
//   param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * grad
//   v = beta2 * v + (1 - beta2) * grad^2
//   param -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + eps)
// step counts from 1 (the first update). param, m and v are updated in place; all are [n] and do
// not overlap (grad may not overlap them either). Throws std::invalid_argument when step < 1.
//
// The element loop is vectorised by the compiler (no branch, no aliasing, sqrt without errno:
// kernels/CMakeLists.txt) and, with threads > 1, split into `threads` contiguous ranges run by
// std::threads (at least kAdamwMinPerThread elements each, fewer threads for a smaller n). Every
// element is computed by the same operations whatever the range, lane or thread, each rounded as
// IEEE 754 says (no fused multiply-add where the build targets none, no reciprocal estimate), so
// the result is bit-identical for every thread count (tests/kernels/adamw_test.cc checks it
// against a scalar loop the compiler may not vectorise).

#include <cstdint>

namespace tandem::kernels::cpu {

// Below this many elements per thread a thread's start (tens of microseconds) costs more than its
// share of the step (~28-32 bytes an element at a core's ~10 GB/s: 64 Ki elements ~ 0.2 ms).
inline constexpr std::int64_t kAdamwMinPerThread = std::int64_t(1) << 16;

void adamw_step(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, std::int64_t step,
                int threads = 1);

}  // namespace tandem::kernels::cpu
