#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::kernels::cpu {

void cross_entropy_local_max(const float* logits, std::int64_t n, std::int64_t v, float* max) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * v;
    float m = -std::numeric_limits<float>::infinity();
    for (std::int64_t c = 0; c < v; ++c) m = std::max(m, row[c]);
    max[i] = m;
  }
}

void cross_entropy_local_sum_exp(const float* logits, std::int64_t n, std::int64_t v,
                                 const float* global_max, float* sum_exp) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * v;
    float sum = 0.0f;
    for (std::int64_t c = 0; c < v; ++c) sum += std::exp(row[c] - global_max[i]);
    sum_exp[i] = sum;
  }
}

void cross_entropy_target_logit(const float* logits, std::int64_t n, std::int64_t v,
                                const std::int32_t* targets, std::int64_t vocab_offset,
                                float* target_logit) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t local = static_cast<std::int64_t>(targets[i]) - vocab_offset;
    target_logit[i] = local >= 0 && local < v ? logits[i * v + local] : 0.0f;
  }
}

void cross_entropy_loss(const float* global_max, const float* global_sum_exp,
                        const float* global_target_logit, std::int64_t n, float* loss) {
  for (std::int64_t i = 0; i < n; ++i) {
    loss[i] = std::log(global_sum_exp[i]) + global_max[i] - global_target_logit[i];
  }
}

void cross_entropy_backward(const float* logits, std::int64_t n, std::int64_t v,
                            const std::int32_t* targets, std::int64_t vocab_offset,
                            const float* global_max, const float* global_sum_exp, float scale,
                            float* dlogits) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * v;
    float* drow = dlogits + i * v;
    const float m = global_max[i];
    const float inv_sum = 1.0f / global_sum_exp[i];
    for (std::int64_t c = 0; c < v; ++c) drow[c] = scale * std::exp(row[c] - m) * inv_sum;
    const std::int64_t local = static_cast<std::int64_t>(targets[i]) - vocab_offset;
    if (local >= 0 && local < v) drow[local] -= scale;
  }
}

}  // namespace tandem::kernels::cpu
