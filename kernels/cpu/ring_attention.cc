#include "kernels/cpu/ring_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::kernels::cpu {
namespace {

std::int64_t group_of(const RingBlock& s) {
  if (s.kv_heads <= 0 || s.heads <= 0 || s.heads % s.kv_heads != 0 || s.mode < 0 || s.mode > 2)
    throw std::invalid_argument("ring attention: heads (" + std::to_string(s.heads) +
                                ") must be a positive multiple of kv_heads (" + std::to_string(s.kv_heads) +
                                ") and mode 0, 1 or 2 (got " + std::to_string(s.mode) + ")");
  return s.heads / s.kv_heads;
}

template <class T>
T dot(const T* a, const T* b, std::int64_t n) {
  T sum = 0;
  for (std::int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

}  // namespace

void kv_pack(const float* qkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols, float* kv) {
  const std::int64_t ld = q_cols + 2 * kv_cols;
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(qkv + r * ld + q_cols, 2 * kv_cols, kv + r * 2 * kv_cols);
}

void kv_unpack(const float* dkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols, float* dqkv) {
  const std::int64_t ld = q_cols + 2 * kv_cols;
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(dkv + r * 2 * kv_cols, 2 * kv_cols, dqkv + r * ld + q_cols);
}

void ring_block_rows(const RingBlock& s, std::int64_t* q0, std::int64_t* qn, std::int64_t* k0, std::int64_t* kn) {
  const std::int64_t c = s.chunk;
  *q0 = s.mode == 2 ? c : 0;
  *qn = s.mode == 2 ? c : 2 * c;
  *k0 = 0;
  *kn = s.mode == 1 ? c : 2 * c;
}

template <class T>
void ring_attention_forward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                            std::int64_t v_ld, const RingBlock& s, bool merge, T* out, T* lse) {
  const std::int64_t group = group_of(s), hd = s.head_dim, rows = 2 * s.chunk, out_ld = s.heads * hd;
  const T scale = T(1) / std::sqrt(T(hd));
  std::int64_t q0, qn, k0, kn;
  ring_block_rows(s, &q0, &qn, &k0, &kn);
  std::vector<T> p(static_cast<std::size_t>(kn)), o(static_cast<std::size_t>(hd));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = h / group;
      for (std::int64_t r = q0; r < q0 + qn; ++r) {
        const T* qr = q + (b * rows + r) * q_ld + h * hd;
        const std::int64_t last = s.mode == 0 ? std::min(r, k0 + kn - 1) : k0 + kn - 1;  // causal: keys <= r
        T m = -std::numeric_limits<T>::infinity();
        for (std::int64_t j = k0; j <= last; ++j) {
          p[j - k0] = scale * dot(qr, k + (b * rows + j) * k_ld + g * hd, hd);
          m = std::max(m, p[j - k0]);
        }
        T l = 0;
        std::fill(o.begin(), o.end(), T(0));
        for (std::int64_t j = k0; j <= last; ++j) {
          const T e = std::exp(p[j - k0] - m);
          l += e;
          const T* vj = v + (b * rows + j) * v_ld + g * hd;
          for (std::int64_t d = 0; d < hd; ++d) o[d] += e * vj[d];
        }
        const T lb = m + std::log(l);
        T* outr = out + (b * rows + r) * out_ld + h * hd;
        T& lr = lse[(b * s.heads + h) * rows + r];
        if (!merge) {
          for (std::int64_t d = 0; d < hd; ++d) outr[d] = o[d] / l;
          lr = lb;
          continue;
        }
        const T mx = std::max(lr, lb);
        const T ln = mx + std::log(std::exp(lr - mx) + std::exp(lb - mx));
        const T keep = std::exp(lr - ln), add = std::exp(lb - ln) / l;
        for (std::int64_t d = 0; d < hd; ++d) outr[d] = outr[d] * keep + o[d] * add;
        lr = ln;
      }
    }
}

template <class T>
void ring_attention_backward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                             std::int64_t v_ld, const T* out, const T* dout, const T* lse, const RingBlock& s,
                             T* dq, std::int64_t dq_ld, T* dk, std::int64_t dk_ld, T* dv, std::int64_t dv_ld) {
  const std::int64_t group = group_of(s), hd = s.head_dim, rows = 2 * s.chunk, out_ld = s.heads * hd;
  const T scale = T(1) / std::sqrt(T(hd));
  std::int64_t q0, qn, k0, kn;
  ring_block_rows(s, &q0, &qn, &k0, &kn);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = h / group;
      for (std::int64_t r = q0; r < q0 + qn; ++r) {
        const T* qr = q + (b * rows + r) * q_ld + h * hd;
        const T* dor = dout + (b * rows + r) * out_ld + h * hd;
        const T D = dot(dor, out + (b * rows + r) * out_ld + h * hd, hd);
        const T L = lse[(b * s.heads + h) * rows + r];
        T* dqr = dq + (b * rows + r) * dq_ld + h * hd;
        const std::int64_t last = s.mode == 0 ? std::min(r, k0 + kn - 1) : k0 + kn - 1;
        for (std::int64_t j = k0; j <= last; ++j) {
          const T* kj = k + (b * rows + j) * k_ld + g * hd;
          const T* vj = v + (b * rows + j) * v_ld + g * hd;
          const T p = std::exp(scale * dot(qr, kj, hd) - L);
          const T ds = p * (dot(dor, vj, hd) - D) * scale;
          T* dkj = dk + (b * rows + j) * dk_ld + g * hd;
          T* dvj = dv + (b * rows + j) * dv_ld + g * hd;
          for (std::int64_t d = 0; d < hd; ++d) {
            dvj[d] += p * dor[d];
            dqr[d] += ds * kj[d];
            dkj[d] += ds * qr[d];
          }
        }
      }
    }
}

template void ring_attention_forward<float>(const float*, std::int64_t, const float*, std::int64_t, const float*,
                                            std::int64_t, const RingBlock&, bool, float*, float*);
template void ring_attention_forward<double>(const double*, std::int64_t, const double*, std::int64_t, const double*,
                                             std::int64_t, const RingBlock&, bool, double*, double*);
template void ring_attention_backward<float>(const float*, std::int64_t, const float*, std::int64_t, const float*,
                                             std::int64_t, const float*, const float*, const float*, const RingBlock&,
                                             float*, std::int64_t, float*, std::int64_t, float*, std::int64_t);
template void ring_attention_backward<double>(const double*, std::int64_t, const double*, std::int64_t, const double*,
                                              std::int64_t, const double*, const double*, const double*,
                                              const RingBlock&, double*, std::int64_t, double*, std::int64_t, double*,
                                              std::int64_t);

}  // namespace tandem::kernels::cpu
