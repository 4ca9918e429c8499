#pragma once
// Elementwise helpers on the CPU (float32), over n contiguous elements:
//   add         out = a + b    (residual connections; out may alias a or b)
//   scale       x *= alpha     (in place: loss scaling, gradient averaging)
//   accumulate  y += x         (gradient accumulation)

#include <cstdint>

namespace tandem::kernels::cpu {

void add(const float* a, const float* b, float* out, std::int64_t n);

void scale(float* x, float alpha, std::int64_t n);

void accumulate(const float* x, float* y, std::int64_t n);

}  // namespace tandem::kernels::cpu
