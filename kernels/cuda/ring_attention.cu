#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/grid.h"
#include "kernels/cuda/ring_attention.h"

namespace tandem::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;

constexpr int kMaxHeadDim = 256;

struct Rows {
  std::int64_t q0, qn, k0, kn;
};

Rows rows_of(const cpu::RingBlock& s) {
  if (s.kv_heads <= 0 || s.heads <= 0 || s.heads % s.kv_heads != 0 || s.mode < 0 || s.mode > 2 ||
      s.head_dim < 1 || s.head_dim > kMaxHeadDim)
    throw std::invalid_argument("ring attention (CUDA): heads (" + std::to_string(s.heads) +
                                ") must be a positive multiple of kv_heads (" + std::to_string(s.kv_heads) +
                                "), mode 0-2 (got " + std::to_string(s.mode) + "), head_dim 1-256 (got " +
                                std::to_string(s.head_dim) + ")");
  Rows r;
  cpu::ring_block_rows(s, &r.q0, &r.qn, &r.k0, &r.kn);
  return r;
}

template <class T>
__device__ float dot(const T* a, const T* b, int n) {
  float sum = 0.0f;
  for (int d = 0; d < n; ++d) sum += to_float(a[d]) * to_float(b[d]);
  return sum;
}

template <class T>
__global__ void forward_kernel(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                               std::int64_t v_ld, cpu::RingBlock s, Rows rr, bool merge, T* out, float* lse) {
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= s.batch * s.heads * rr.qn) return;
  const std::int64_t r = rr.q0 + t % rr.qn, h = (t / rr.qn) % s.heads, b = t / (rr.qn * s.heads);
  const int hd = int(s.head_dim);
  const std::int64_t rows = 2 * s.chunk, g = h / (s.heads / s.kv_heads);
  const float scale = rsqrtf(float(hd));
  const T* qr = q + (b * rows + r) * q_ld + h * hd;
  const std::int64_t end = rr.k0 + rr.kn - 1, last = s.mode == 0 && r < end ? r : end;
  float m = -INFINITY;
  for (std::int64_t j = rr.k0; j <= last; ++j) m = fmaxf(m, scale * dot(qr, k + (b * rows + j) * k_ld + g * hd, hd));
  float o[kMaxHeadDim];
  for (int d = 0; d < hd; ++d) o[d] = 0.0f;
  float l = 0.0f;
  for (std::int64_t j = rr.k0; j <= last; ++j) {
    const float e = __expf(scale * dot(qr, k + (b * rows + j) * k_ld + g * hd, hd) - m);
    l += e;
    const T* vj = v + (b * rows + j) * v_ld + g * hd;
    for (int d = 0; d < hd; ++d) o[d] += e * to_float(vj[d]);
  }
  const float lb = m + logf(l);
  T* outr = out + (b * rows + r) * s.heads * hd + h * hd;
  float& lr = lse[(b * s.heads + h) * rows + r];
  if (!merge) {
    for (int d = 0; d < hd; ++d) outr[d] = from_float<T>(o[d] / l);
    lr = lb;
    return;
  }
  const float mx = fmaxf(lr, lb), ln = mx + logf(__expf(lr - mx) + __expf(lb - mx));
  const float keep = __expf(lr - ln), add = __expf(lb - ln) / l;
  for (int d = 0; d < hd; ++d) outr[d] = from_float<T>(to_float(outr[d]) * keep + o[d] * add);
  lr = ln;
}

template <class T>
__global__ void backward_kernel(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                                std::int64_t v_ld, const T* out, const T* dout, const float* lse, cpu::RingBlock s,
                                Rows rr, T* dq, std::int64_t dq_ld, float* dk, std::int64_t dk_ld, float* dv,
                                std::int64_t dv_ld) {
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= s.batch * s.heads * rr.qn) return;
  const std::int64_t r = rr.q0 + t % rr.qn, h = (t / rr.qn) % s.heads, b = t / (rr.qn * s.heads);
  const int hd = int(s.head_dim);
  const std::int64_t rows = 2 * s.chunk, g = h / (s.heads / s.kv_heads), o_ld = s.heads * hd;
  const float scale = rsqrtf(float(hd));
  const T* qr = q + (b * rows + r) * q_ld + h * hd;
  const T* dor = dout + (b * rows + r) * o_ld + h * hd;
  const float D = dot(dor, out + (b * rows + r) * o_ld + h * hd, hd);
  const float L = lse[(b * s.heads + h) * rows + r];
  float dqr[kMaxHeadDim];
  for (int d = 0; d < hd; ++d) dqr[d] = 0.0f;
  const std::int64_t end = rr.k0 + rr.kn - 1, last = s.mode == 0 && r < end ? r : end;
  for (std::int64_t j = rr.k0; j <= last; ++j) {
    const T* kj = k + (b * rows + j) * k_ld + g * hd;
    const T* vj = v + (b * rows + j) * v_ld + g * hd;
    const float p = __expf(scale * dot(qr, kj, hd) - L);
    const float ds = p * (dot(dor, vj, hd) - D) * scale;
    float* dkj = dk + (b * rows + j) * dk_ld + g * hd;
    float* dvj = dv + (b * rows + j) * dv_ld + g * hd;
    for (int d = 0; d < hd; ++d) {
      atomicAdd(dvj + d, p * to_float(dor[d]));
      atomicAdd(dkj + d, ds * to_float(qr[d]));
      dqr[d] += ds * to_float(kj[d]);
    }
  }
  T* dqp = dq + (b * rows + r) * dq_ld + h * hd;
  for (int d = 0; d < hd; ++d) dqp[d] = from_float<T>(to_float(dqp[d]) + dqr[d]);
}

template <class T>
__global__ void kv_unpack_kernel(const float* dkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols,
                                 T* dqkv) {
  const std::int64_t w = 2 * kv_cols, n = rows * w;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dqkv[(i / w) * (q_cols + w) + q_cols + i % w] = from_float<T>(dkv[i]);
}

unsigned int blocks_for(std::int64_t threads) { return unsigned((threads + detail::kBlock - 1) / detail::kBlock); }

}  // namespace

template <class T>
void ring_attention_forward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                            std::int64_t v_ld, const cpu::RingBlock& s, bool merge, T* out, float* lse,
                            cudaStream_t stream) {
  const Rows rr = rows_of(s);
  const std::int64_t threads = s.batch * s.heads * rr.qn;
  if (threads == 0) return;
  forward_kernel<T><<<blocks_for(threads), detail::kBlock, 0, stream>>>(q, q_ld, k, k_ld, v, v_ld, s, rr, merge, out,
                                                                       lse);
  detail::check_launch("ring_attention_forward");
}

template <class T>
void ring_attention_backward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                             std::int64_t v_ld, const T* out, const T* dout, const float* lse,
                             const cpu::RingBlock& s, T* dq, std::int64_t dq_ld, float* dk, std::int64_t dk_ld,
                             float* dv, std::int64_t dv_ld, cudaStream_t stream) {
  const Rows rr = rows_of(s);
  const std::int64_t threads = s.batch * s.heads * rr.qn;
  if (threads == 0) return;
  backward_kernel<T><<<blocks_for(threads), detail::kBlock, 0, stream>>>(q, q_ld, k, k_ld, v, v_ld, out, dout, lse, s,
                                                                        rr, dq, dq_ld, dk, dk_ld, dv, dv_ld);
  detail::check_launch("ring_attention_backward");
}

template <class T>
void kv_pack(const T* qkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols, T* kv, cudaStream_t stream) {
  if (rows == 0 || kv_cols == 0) return;
  const std::size_t e = sizeof(T);
  detail::check_cuda(cudaMemcpy2DAsync(kv, 2 * kv_cols * e, qkv + q_cols, (q_cols + 2 * kv_cols) * e, 2 * kv_cols * e,
                                       std::size_t(rows), cudaMemcpyDeviceToDevice, stream),
                     "kv_pack");
}

template <class T>
void kv_unpack(const float* dkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols, T* dqkv,
               cudaStream_t stream) {
  const std::int64_t n = rows * 2 * kv_cols;
  if (n == 0) return;
  kv_unpack_kernel<T><<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(dkv, rows, q_cols, kv_cols, dqkv);
  detail::check_launch("kv_unpack");
}

#define TANDEM_RING_INSTANTIATE(T)                                                                                   \
  template void ring_attention_forward<T>(const T*, std::int64_t, const T*, std::int64_t, const T*, std::int64_t,    \
                                          const cpu::RingBlock&, bool, T*, float*, cudaStream_t);                    \
  template void ring_attention_backward<T>(const T*, std::int64_t, const T*, std::int64_t, const T*, std::int64_t,   \
                                           const T*, const T*, const float*, const cpu::RingBlock&, T*,              \
                                           std::int64_t, float*, std::int64_t, float*, std::int64_t, cudaStream_t); \
  template void kv_pack<T>(const T*, std::int64_t, std::int64_t, std::int64_t, T*, cudaStream_t);                    \
  template void kv_unpack<T>(const float*, std::int64_t, std::int64_t, std::int64_t, T*, cudaStream_t);
TANDEM_RING_INSTANTIATE(float)
TANDEM_RING_INSTANTIATE(__nv_bfloat16)
#undef TANDEM_RING_INSTANTIATE

}  // namespace tandem::kernels::cuda
