#include <cmath>

#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/grid.h"
#include "kernels/cuda/ring_self_attention.h"

namespace tandem::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;
using I = std::int64_t;

unsigned int blocks_for(I threads) { return unsigned((threads + detail::kBlock - 1) / detail::kBlock); }

__device__ I thread_index() { return I(blockIdx.x) * blockDim.x + threadIdx.x; }

// Score (b, h, q, j) in [b, heads, c, s].
__device__ I at(const RingSelfShape& s, I b, I h, I q, I j) { return ((b * s.heads + h) * s.chunk + q) * (s.sp * s.chunk) + j; }

template <class T>
__global__ void pack_kernel(const T* qkv, RingSelfShape s, T* k, T* v) {
  const I t = thread_index(), D = s.heads * s.head_dim;
  if (t >= s.batch * s.chunk * D) return;
  const I r = t / D, c = t % D;
  k[t] = qkv[r * 3 * D + D + c];
  v[t] = qkv[r * 3 * D + 2 * D + c];
}

// One thread per (b, h, q, t) of the block: dot(a row q, b row t) -> out[at(b, h, q, block*c + t)].
template <class T>
__global__ void block_dot_kernel(const T* a, I a_ld, const T* bm, I b_ld, RingSelfShape s, T* out) {
  const I t = thread_index(), c = s.chunk, hd = s.head_dim;
  if (t >= s.batch * s.heads * c * c) return;
  const I kt = t % c, q = (t / c) % c, h = (t / (c * c)) % s.heads, b = t / (c * c * s.heads);
  const T* x = a + (b * c + q) * a_ld + h * hd;
  const T* y = bm + (b * c + kt) * b_ld + h * hd;
  float sum = 0.0f;
  for (I e = 0; e < hd; ++e) sum += to_float(x[e]) * to_float(y[e]);
  out[at(s, b, h, q, s.block * c + kt)] = from_float<T>(sum);
}

template <class T>
__global__ void softmax_kernel(const T* scores, RingSelfShape s, T* probs) {
  const I r = thread_index(), S = s.sp * s.chunk;
  if (r >= s.batch * s.heads * s.chunk) return;
  const I last = s.block * s.chunk + r % s.chunk;
  const float scale = rsqrtf(float(s.head_dim));
  const T* x = scores + r * S;
  T* p = probs + r * S;
  float m = -INFINITY, sum = 0.0f;
  for (I j = 0; j <= last; ++j) m = fmaxf(m, scale * to_float(x[j]));
  for (I j = 0; j <= last; ++j) sum += __expf(scale * to_float(x[j]) - m);
  for (I j = 0; j < S; ++j) p[j] = from_float<T>(j <= last ? __expf(scale * to_float(x[j]) - m) / sum : 0.0f);
}

// One thread per (b, q, h, e): out[b*c+q, h*hd+e] (+)= sum_t w[at(b, h, q, block*c + t)] m[b*c+t, h*hd+e].
template <class T>
__global__ void block_matmul_kernel(const T* w, const T* m, I m_ld, RingSelfShape s, bool accumulate, T* out, I out_ld) {
  const I t = thread_index(), c = s.chunk, hd = s.head_dim, D = s.heads * hd;
  if (t >= s.batch * c * D) return;
  const I col = t % D, q = (t / D) % c, b = t / (D * c), h = col / hd;
  const T* wr = w + at(s, b, h, q, s.block * c);
  float sum = 0.0f;
  for (I k = 0; k < c; ++k) sum += to_float(wr[k]) * to_float(m[(b * c + k) * m_ld + col]);
  T* o = out + (b * c + q) * out_ld + col;
  *o = from_float<T>(accumulate ? to_float(*o) + sum : sum);
}

// One thread per (b, j, h, e) of the whole sequence: full[b*s+j, h*hd+e] = sum_q w[at(b, h, q, j)] m[b*c+q, ...].
template <class T>
__global__ void full_matmul_kernel(const T* w, const T* m, I m_ld, RingSelfShape s, T* full) {
  const I t = thread_index(), c = s.chunk, S = s.sp * c, D = s.heads * s.head_dim;
  if (t >= s.batch * S * D) return;
  const I col = t % D, j = (t / D) % S, b = t / (D * S), h = col / s.head_dim;
  float sum = 0.0f;
  for (I q = 0; q < c; ++q) sum += to_float(w[at(s, b, h, q, j)]) * to_float(m[(b * c + q) * m_ld + col]);
  full[t] = from_float<T>(sum);
}

template <class T>
__global__ void softmax_backward_kernel(const T* probs, const T* dprobs, RingSelfShape s, T* dscores) {
  const I r = thread_index(), S = s.sp * s.chunk;
  if (r >= s.batch * s.heads * s.chunk) return;
  const float scale = rsqrtf(float(s.head_dim));
  const T* p = probs + r * S;
  const T* dp = dprobs + r * S;
  float sum = 0.0f;
  for (I j = 0; j < S; ++j) sum += to_float(p[j]) * to_float(dp[j]);
  for (I j = 0; j < S; ++j) dscores[r * S + j] = from_float<T>(scale * to_float(p[j]) * (to_float(dp[j]) - sum));
}

template <class T>
__global__ void unpack_kernel(const T* dk_full, const T* dv_full, RingSelfShape s, T* dqkv) {
  const I t = thread_index(), c = s.chunk, D = s.heads * s.head_dim;
  if (t >= s.batch * c * D) return;
  const I col = t % D, r = t / D, b = r / c, src = (b * s.sp * c + s.block * c + r % c) * D + col;
  dqkv[r * 3 * D + D + col] = dk_full[src];
  dqkv[r * 3 * D + 2 * D + col] = dv_full[src];
}

I rows_cols(const RingSelfShape& s) { return s.batch * s.chunk * s.heads * s.head_dim; }
I score_rows(const RingSelfShape& s) { return s.batch * s.heads * s.chunk; }

}  // namespace

template <class T>
void ring_self_pack(const T* qkv, const RingSelfShape& s, T* k, T* v, cudaStream_t stream) {
  pack_kernel<T><<<blocks_for(rows_cols(s)), detail::kBlock, 0, stream>>>(qkv, s, k, v);
  detail::check_launch("ring_self_pack");
}
template <class T>
void ring_self_scores(const T* q, I q_ld, const T* k, I k_ld, const RingSelfShape& s, T* scores, cudaStream_t stream) {
  block_dot_kernel<T><<<blocks_for(score_rows(s) * s.chunk), detail::kBlock, 0, stream>>>(q, q_ld, k, k_ld, s, scores);
  detail::check_launch("ring_self_scores");
}
template <class T>
void ring_self_softmax(const T* scores, const RingSelfShape& s, T* probs, cudaStream_t stream) {
  softmax_kernel<T><<<blocks_for(score_rows(s)), detail::kBlock, 0, stream>>>(scores, s, probs);
  detail::check_launch("ring_self_softmax");
}
template <class T>
void ring_self_context(const T* probs, const T* v, I v_ld, const RingSelfShape& s, bool accumulate, T* ctx,
                       cudaStream_t stream) {
  block_matmul_kernel<T><<<blocks_for(rows_cols(s)), detail::kBlock, 0, stream>>>(probs, v, v_ld, s, accumulate, ctx,
                                                                                  s.heads * s.head_dim);
  detail::check_launch("ring_self_context");
}
template <class T>
void ring_self_grad_v(const T* probs, const T* dctx, const RingSelfShape& s, T* dv_full, cudaStream_t stream) {
  full_matmul_kernel<T><<<blocks_for(rows_cols(s) * s.sp), detail::kBlock, 0, stream>>>(probs, dctx, s.heads * s.head_dim,
                                                                                         s, dv_full);
  detail::check_launch("ring_self_grad_v");
}
template <class T>
void ring_self_grad_probs(const T* dctx, const T* v, I v_ld, const RingSelfShape& s, T* dprobs, cudaStream_t stream) {
  block_dot_kernel<T><<<blocks_for(score_rows(s) * s.chunk), detail::kBlock, 0, stream>>>(dctx, s.heads * s.head_dim, v,
                                                                                          v_ld, s, dprobs);
  detail::check_launch("ring_self_grad_probs");
}
template <class T>
void ring_self_softmax_backward(const T* probs, const T* dprobs, const RingSelfShape& s, T* dscores, cudaStream_t stream) {
  softmax_backward_kernel<T><<<blocks_for(score_rows(s)), detail::kBlock, 0, stream>>>(probs, dprobs, s, dscores);
  detail::check_launch("ring_self_softmax_backward");
}
template <class T>
void ring_self_grad_k(const T* dscores, const T* q, I q_ld, const RingSelfShape& s, T* dk_full, cudaStream_t stream) {
  full_matmul_kernel<T><<<blocks_for(rows_cols(s) * s.sp), detail::kBlock, 0, stream>>>(dscores, q, q_ld, s, dk_full);
  detail::check_launch("ring_self_grad_k");
}
template <class T>
void ring_self_grad_q(const T* dscores, const T* k, I k_ld, const RingSelfShape& s, bool accumulate, T* dq, I dq_ld,
                      cudaStream_t stream) {
  block_matmul_kernel<T><<<blocks_for(rows_cols(s)), detail::kBlock, 0, stream>>>(dscores, k, k_ld, s, accumulate, dq,
                                                                                  dq_ld);
  detail::check_launch("ring_self_grad_q");
}
template <class T>
void ring_self_unpack(const T* dk_full, const T* dv_full, const RingSelfShape& s, T* dqkv, cudaStream_t stream) {
  unpack_kernel<T><<<blocks_for(rows_cols(s)), detail::kBlock, 0, stream>>>(dk_full, dv_full, s, dqkv);
  detail::check_launch("ring_self_unpack");
}

#define TANDEM_RING_SELF_CUDA(T)                                                                                    \
  template void ring_self_pack<T>(const T*, const RingSelfShape&, T*, T*, cudaStream_t);                            \
  template void ring_self_scores<T>(const T*, I, const T*, I, const RingSelfShape&, T*, cudaStream_t);              \
  template void ring_self_softmax<T>(const T*, const RingSelfShape&, T*, cudaStream_t);                             \
  template void ring_self_context<T>(const T*, const T*, I, const RingSelfShape&, bool, T*, cudaStream_t);          \
  template void ring_self_grad_v<T>(const T*, const T*, const RingSelfShape&, T*, cudaStream_t);                    \
  template void ring_self_grad_probs<T>(const T*, const T*, I, const RingSelfShape&, T*, cudaStream_t);             \
  template void ring_self_softmax_backward<T>(const T*, const T*, const RingSelfShape&, T*, cudaStream_t);          \
  template void ring_self_grad_k<T>(const T*, const T*, I, const RingSelfShape&, T*, cudaStream_t);                 \
  template void ring_self_grad_q<T>(const T*, const T*, I, const RingSelfShape&, bool, T*, I, cudaStream_t);        \
  template void ring_self_unpack<T>(const T*, const T*, const RingSelfShape&, T*, cudaStream_t);
TANDEM_RING_SELF_CUDA(float)
TANDEM_RING_SELF_CUDA(__nv_bfloat16)
#undef TANDEM_RING_SELF_CUDA

}  // namespace tandem::kernels::cuda
