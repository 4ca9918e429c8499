#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::kernels::cpu {
namespace {

// Query heads per kv head; rejects shapes where the grouping is not whole.
std::int64_t group_size(std::int64_t heads, std::int64_t kv_heads) {
  if (kv_heads <= 0 || heads <= 0 || heads % kv_heads != 0) {
    throw std::invalid_argument("attention: heads (" + std::to_string(heads) +
                                ") must be a positive multiple of kv_heads (" +
                                std::to_string(kv_heads) + ")");
  }
  return heads / kv_heads;
}

float dot(const float* a, const float* b, std::int64_t n) {
  float sum = 0.0f;
  for (std::int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

}  // namespace

void attention_forward(const float* q, std::int64_t q_ld, const float* k, std::int64_t k_ld,
                       const float* v, std::int64_t v_ld, std::int64_t batch, std::int64_t seq,
                       std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, float* out,
                       float* lse, float* probs) {
  const std::int64_t group = group_size(heads, kv_heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const std::int64_t out_ld = heads * head_dim;
  std::vector<float> p(static_cast<std::size_t>(seq));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t col = h * head_dim;
      const std::int64_t kv_col = (h / group) * head_dim;
      for (std::int64_t i = 0; i < seq; ++i) {
        const float* qi = q + (b * seq + i) * q_ld + col;
        float max = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j <= i; ++j) {
          p[j] = scale * dot(qi, k + (b * seq + j) * k_ld + kv_col, head_dim);
          max = std::max(max, p[j]);
        }
        float sum = 0.0f;
        for (std::int64_t j = 0; j <= i; ++j) {
          p[j] = std::exp(p[j] - max);
          sum += p[j];
        }
        const float inv_sum = 1.0f / sum;
        float* oi = out + (b * seq + i) * out_ld + col;
        std::fill(oi, oi + head_dim, 0.0f);
        for (std::int64_t j = 0; j <= i; ++j) {
          p[j] *= inv_sum;
          const float* vj = v + (b * seq + j) * v_ld + kv_col;
          for (std::int64_t d = 0; d < head_dim; ++d) oi[d] += p[j] * vj[d];
        }
        const std::int64_t row = (b * heads + h) * seq + i;
        lse[row] = max + std::log(sum);
        if (probs != nullptr) {
          float* pr = probs + row * seq;
          std::copy(p.begin(), p.begin() + i + 1, pr);
          std::fill(pr + i + 1, pr + seq, 0.0f);
        }
      }
    }
  }
}

void attention_backward(const float* q, std::int64_t q_ld, const float* k, std::int64_t k_ld,
                        const float* v, std::int64_t v_ld, const float* out, const float* dout,
                        const float* lse, const float* probs, std::int64_t batch, std::int64_t seq,
                        std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, float* dq,
                        std::int64_t dq_ld, float* dk, std::int64_t dk_ld, float* dv,
                        std::int64_t dv_ld) {
  const std::int64_t group = group_size(heads, kv_heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const std::int64_t out_ld = heads * head_dim;
  for (std::int64_t r = 0; r < batch * seq; ++r) {
    std::fill(dk + r * dk_ld, dk + r * dk_ld + kv_heads * head_dim, 0.0f);
    std::fill(dv + r * dv_ld, dv + r * dv_ld + kv_heads * head_dim, 0.0f);
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t col = h * head_dim;
      const std::int64_t kv_col = (h / group) * head_dim;
      for (std::int64_t i = 0; i < seq; ++i) {
        const std::int64_t row = (b * heads + h) * seq + i;
        const float* qi = q + (b * seq + i) * q_ld + col;
        const float* doi = dout + (b * seq + i) * out_ld + col;
        float* dqi = dq + (b * seq + i) * dq_ld + col;
        // ds[i,j] = p[i,j] * (dout_i . v_j - dout_i . out_i): the softmax Jacobian applied to dp.
        const float delta = dot(doi, out + (b * seq + i) * out_ld + col, head_dim);
        std::fill(dqi, dqi + head_dim, 0.0f);
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* kj = k + (b * seq + j) * k_ld + kv_col;
          const float* vj = v + (b * seq + j) * v_ld + kv_col;
          const float p = probs != nullptr ? probs[row * seq + j]
                                           : std::exp(scale * dot(qi, kj, head_dim) - lse[row]);
          const float ds = p * (dot(doi, vj, head_dim) - delta);
          float* dkj = dk + (b * seq + j) * dk_ld + kv_col;
          float* dvj = dv + (b * seq + j) * dv_ld + kv_col;
          for (std::int64_t d = 0; d < head_dim; ++d) {
            dqi[d] += scale * ds * kj[d];
            dkj[d] += scale * ds * qi[d];
            dvj[d] += p * doi[d];
          }
        }
      }
    }
  }
}

}  // namespace tandem::kernels::cpu
