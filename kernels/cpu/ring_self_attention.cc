#include "kernels/cpu/ring_self_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tandem::kernels::cpu {
namespace {

// Index of score (b, h, q, j) in [b, heads, c, s].
inline std::int64_t at(const RingSelfShape& s, std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t j) {
  return ((b * s.heads + h) * s.chunk + q) * s.seq() + j;
}

// The three loop shapes the ring's kernels share, on one head's columns [h*hd, (h+1)*hd) of each
// row. `a` and `x` rows are local tokens (b, i) at strides a_ld / x_ld; `w` is a [b, heads, c, s]
// score-shaped array.

// w(b, h, i, block*c + t) = a_i . x_t over this block's c keys (scores: Q K^T; grad_probs: dC V^T).
template <class T>
void block_dots(const T* a, std::int64_t a_ld, const T* x, std::int64_t x_ld, const RingSelfShape& s, T* w) {
  const std::int64_t c = s.chunk, hd = s.head_dim;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        const T* ai = a + (b * c + i) * a_ld + h * hd;
        for (std::int64_t t = 0; t < c; ++t) {
          const T* xt = x + (b * c + t) * x_ld + h * hd;
          T dot = 0;
          for (std::int64_t e = 0; e < hd; ++e) dot += ai[e] * xt[e];
          w[at(s, b, h, i, s.block * c + t)] = dot;
        }
      }
}

// out_i (+)= sum over this block's keys t of w(b, h, i, block*c + t) x_t (context: P V; grad_q: dS K).
template <class T>
void block_weighted_sum(const T* w, const T* x, std::int64_t x_ld, const RingSelfShape& s, bool accumulate, T* out,
                        std::int64_t out_ld) {
  const std::int64_t c = s.chunk, hd = s.head_dim;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        T* o = out + (b * c + i) * out_ld + h * hd;
        if (!accumulate)
          for (std::int64_t e = 0; e < hd; ++e) o[e] = 0;
        const T* wi = w + at(s, b, h, i, s.block * c);
        for (std::int64_t t = 0; t < c; ++t) {
          const T* xt = x + (b * c + t) * x_ld + h * hd;
          for (std::int64_t e = 0; e < hd; ++e) o[e] += wi[t] * xt[e];
        }
      }
}

// full_j = sum over local queries i of w(b, h, i, j) x_i for every key j of the whole sequence,
// [batch, s, cols] (grad_v: P^T dC; grad_k: dS^T Q).
template <class T>
void full_outer_sum(const T* w, const T* x, std::int64_t x_ld, const RingSelfShape& s, T* full) {
  const std::int64_t c = s.chunk, hd = s.head_dim, D = s.cols(), S = s.seq();
  std::memset(static_cast<void*>(full), 0, sizeof(T) * size_t(s.batch * S * D));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        const T* wi = w + at(s, b, h, i, 0);
        const T* xi = x + (b * c + i) * x_ld + h * hd;
        for (std::int64_t j = 0; j < S; ++j) {
          T* o = full + (b * S + j) * D + h * hd;
          for (std::int64_t e = 0; e < hd; ++e) o[e] += wi[j] * xi[e];
        }
      }
}

}  // namespace

template <class T>
void ring_self_scores(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const RingSelfShape& s, T* scores) {
  block_dots(q, q_ld, k, k_ld, s, scores);
}

template <class T>
void ring_self_softmax(const T* scores, const RingSelfShape& s, T* probs) {
  const T scale = T(1) / std::sqrt(T(s.head_dim));
  const std::int64_t S = s.seq();
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < s.chunk; ++i) {
        const std::int64_t last = s.block * s.chunk + i;  // the causal mask: keys 0..last
        const T* x = scores + at(s, b, h, i, 0);
        T* p = probs + at(s, b, h, i, 0);
        T m = x[0] * scale;
        for (std::int64_t j = 1; j <= last; ++j) m = std::max(m, x[j] * scale);
        T sum = 0;
        for (std::int64_t j = 0; j <= last; ++j) sum += (p[j] = std::exp(x[j] * scale - m));
        for (std::int64_t j = 0; j <= last; ++j) p[j] /= sum;
        for (std::int64_t j = last + 1; j < S; ++j) p[j] = 0;
      }
}

template <class T>
void ring_self_context(const T* probs, const T* v, std::int64_t v_ld, const RingSelfShape& s, bool accumulate, T* ctx) {
  block_weighted_sum(probs, v, v_ld, s, accumulate, ctx, s.cols());
}

template <class T>
void ring_self_grad_v(const T* probs, const T* dctx, const RingSelfShape& s, T* dv_full) {
  full_outer_sum(probs, dctx, s.cols(), s, dv_full);
}

template <class T>
void ring_self_grad_probs(const T* dctx, const T* v, std::int64_t v_ld, const RingSelfShape& s, T* dprobs) {
  block_dots(dctx, s.cols(), v, v_ld, s, dprobs);
}

template <class T>
void ring_self_softmax_backward(const T* probs, const T* dprobs, const RingSelfShape& s, T* dscores) {
  const T scale = T(1) / std::sqrt(T(s.head_dim));
  const std::int64_t S = s.seq(), rows = s.batch * s.heads * s.chunk;
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* p = probs + r * S;
    const T* dp = dprobs + r * S;
    T sum = 0;
    for (std::int64_t j = 0; j < S; ++j) sum += p[j] * dp[j];
    for (std::int64_t j = 0; j < S; ++j) dscores[r * S + j] = scale * p[j] * (dp[j] - sum);
  }
}

template <class T>
void ring_self_grad_k(const T* dscores, const T* q, std::int64_t q_ld, const RingSelfShape& s, T* dk_full) {
  full_outer_sum(dscores, q, q_ld, s, dk_full);
}

template <class T>
void ring_self_grad_q(const T* dscores, const T* k, std::int64_t k_ld, const RingSelfShape& s, bool accumulate, T* dq,
                      std::int64_t dq_ld) {
  block_weighted_sum(dscores, k, k_ld, s, accumulate, dq, dq_ld);
}

void ring_self_pack(const float* qkv, const RingSelfShape& s, float* k, float* v) {
  const std::int64_t D = s.cols(), rows = s.batch * s.chunk;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::memcpy(k + r * D, qkv + r * 3 * D + D, sizeof(float) * size_t(D));
    std::memcpy(v + r * D, qkv + r * 3 * D + 2 * D, sizeof(float) * size_t(D));
  }
}

void ring_self_unpack(const float* dk_full, const float* dv_full, const RingSelfShape& s, float* dqkv) {
  const std::int64_t D = s.cols(), c = s.chunk, S = s.seq();
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < c; ++t) {
      const std::int64_t src = (b * S + s.block * c + t) * D, dst = (b * c + t) * 3 * D;
      std::memcpy(dqkv + dst + D, dk_full + src, sizeof(float) * size_t(D));
      std::memcpy(dqkv + dst + 2 * D, dv_full + src, sizeof(float) * size_t(D));
    }
}

#define TANDEM_RING_SELF(T)                                                                                      \
  template void ring_self_scores<T>(const T*, std::int64_t, const T*, std::int64_t, const RingSelfShape&, T*);   \
  template void ring_self_softmax<T>(const T*, const RingSelfShape&, T*);                                        \
  template void ring_self_context<T>(const T*, const T*, std::int64_t, const RingSelfShape&, bool, T*);          \
  template void ring_self_grad_v<T>(const T*, const T*, const RingSelfShape&, T*);                               \
  template void ring_self_grad_probs<T>(const T*, const T*, std::int64_t, const RingSelfShape&, T*);             \
  template void ring_self_softmax_backward<T>(const T*, const T*, const RingSelfShape&, T*);                     \
  template void ring_self_grad_k<T>(const T*, const T*, std::int64_t, const RingSelfShape&, T*);                 \
  template void ring_self_grad_q<T>(const T*, const T*, std::int64_t, const RingSelfShape&, bool, T*, std::int64_t);
TANDEM_RING_SELF(float)
TANDEM_RING_SELF(double)
#undef TANDEM_RING_SELF

}  // namespace tandem::kernels::cpu
