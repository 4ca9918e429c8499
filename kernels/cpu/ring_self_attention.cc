#include "kernels/cpu/ring_self_attention.h"

#include <cmath>
#include <cstring>

namespace tandem::kernels::cpu {
namespace {

// Index of score (b, h, q, j) in [b, heads, c, s].
inline std::int64_t at(const RingSelfShape& s, std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t j) {
  return ((b * s.heads + h) * s.chunk + q) * s.seq() + j;
}

}  // namespace

template <class T>
void ring_self_scores(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const RingSelfShape& s, T* scores) {
  const std::int64_t c = s.chunk, hd = s.head_dim;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        const T* qi = q + (b * c + i) * q_ld + h * hd;
        for (std::int64_t t = 0; t < c; ++t) {
          const T* kt = k + (b * c + t) * k_ld + h * hd;
          T x = 0;
          for (std::int64_t e = 0; e < hd; ++e) x += qi[e] * kt[e];
          scores[at(s, b, h, i, s.block * c + t)] = x;
        }
      }
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
  const std::int64_t c = s.chunk, hd = s.head_dim, D = s.cols();
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        T* o = ctx + (b * c + i) * D + h * hd;
        if (!accumulate)
          for (std::int64_t e = 0; e < hd; ++e) o[e] = 0;
        const T* p = probs + at(s, b, h, i, s.block * c);
        for (std::int64_t t = 0; t < c; ++t) {
          const T* vt = v + (b * c + t) * v_ld + h * hd;
          for (std::int64_t e = 0; e < hd; ++e) o[e] += p[t] * vt[e];
        }
      }
}

template <class T>
void ring_self_grad_v(const T* probs, const T* dctx, const RingSelfShape& s, T* dv_full) {
  const std::int64_t c = s.chunk, hd = s.head_dim, D = s.cols(), S = s.seq();
  std::memset(static_cast<void*>(dv_full), 0, sizeof(T) * size_t(s.batch * S * D));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        const T* p = probs + at(s, b, h, i, 0);
        const T* g = dctx + (b * c + i) * D + h * hd;
        for (std::int64_t j = 0; j < S; ++j) {
          T* o = dv_full + (b * S + j) * D + h * hd;
          for (std::int64_t e = 0; e < hd; ++e) o[e] += p[j] * g[e];
        }
      }
}

template <class T>
void ring_self_grad_probs(const T* dctx, const T* v, std::int64_t v_ld, const RingSelfShape& s, T* dprobs) {
  const std::int64_t c = s.chunk, hd = s.head_dim, D = s.cols();
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        const T* g = dctx + (b * c + i) * D + h * hd;
        for (std::int64_t t = 0; t < c; ++t) {
          const T* vt = v + (b * c + t) * v_ld + h * hd;
          T x = 0;
          for (std::int64_t e = 0; e < hd; ++e) x += g[e] * vt[e];
          dprobs[at(s, b, h, i, s.block * c + t)] = x;
        }
      }
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
  const std::int64_t c = s.chunk, hd = s.head_dim, D = s.cols(), S = s.seq();
  std::memset(static_cast<void*>(dk_full), 0, sizeof(T) * size_t(s.batch * S * D));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        const T* ds = dscores + at(s, b, h, i, 0);
        const T* qi = q + (b * c + i) * q_ld + h * hd;
        for (std::int64_t j = 0; j < S; ++j) {
          T* o = dk_full + (b * S + j) * D + h * hd;
          for (std::int64_t e = 0; e < hd; ++e) o[e] += ds[j] * qi[e];
        }
      }
}

template <class T>
void ring_self_grad_q(const T* dscores, const T* k, std::int64_t k_ld, const RingSelfShape& s, bool accumulate, T* dq,
                      std::int64_t dq_ld) {
  const std::int64_t c = s.chunk, hd = s.head_dim;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < c; ++i) {
        T* o = dq + (b * c + i) * dq_ld + h * hd;
        if (!accumulate)
          for (std::int64_t e = 0; e < hd; ++e) o[e] = 0;
        const T* ds = dscores + at(s, b, h, i, s.block * c);
        for (std::int64_t t = 0; t < c; ++t) {
          const T* kt = k + (b * c + t) * k_ld + h * hd;
          for (std::int64_t e = 0; e < hd; ++e) o[e] += ds[t] * kt[e];
        }
      }
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
