#include <cmath>
#include <string>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/reduce.cuh"

namespace tandem::kernels::cuda {
namespace {

using detail::from_float;
using detail::kWarpSize;
using detail::to_float;

constexpr int kMaxHeadDim = 256;
constexpr int kPerLane = kMaxHeadDim / kWarpSize;  // head elements a lane holds: d = lane + 32*e
constexpr int kWarpsPerBlock = 4;

struct Shape {
  std::int64_t batch;
  std::int64_t seq;
  std::int64_t heads;
  std::int64_t group;  // query heads per kv head
  int head_dim;
  float scale;
};

// The lane's share of a head row, zero past head_dim.
template <typename T>
__device__ __forceinline__ void load_row(const T* row, int head_dim, int lane,
                                         float (&out)[kPerLane]) {
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int d = lane + kWarpSize * e;
    out[e] = d < head_dim ? to_float(row[d]) : 0.0f;
  }
}

template <typename T>
__device__ __forceinline__ void store_row(const float (&in)[kPerLane], float factor, int head_dim,
                                          int lane, T* row) {
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int d = lane + kWarpSize * e;
    if (d < head_dim) row[d] = from_float<T>(factor * in[e]);
  }
}

// Dot product of a register-held head row with a head row in memory, summed over the warp.
template <typename T>
__device__ __forceinline__ float warp_dot(const float (&a)[kPerLane], const T* row, int head_dim,
                                          int lane) {
  float sum = 0.0f;
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int d = lane + kWarpSize * e;
    if (d < head_dim) sum += a[e] * to_float(row[d]);
  }
  return detail::warp_reduce(sum, detail::Sum{});
}

// The query row (b, h, i) a warp works on: i, the token row of (b, 0), and the columns of head h
// and of its kv head.
struct QueryRow {
  std::int64_t i, token0, col, kv_col;
};

__device__ __forceinline__ QueryRow query_row(std::int64_t row, const Shape& s) {
  const std::int64_t h = row / s.seq % s.heads;
  return {row % s.seq, row / (s.seq * s.heads) * s.seq, h * s.head_dim, h / s.group * s.head_dim};
}

// One warp per query row (b, h, i); keys stream through an online softmax.
template <typename T>
__global__ void forward_kernel(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld,
                               const T* v, std::int64_t v_ld, Shape s, T* out, float* lse,
                               T* probs) {
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (row >= s.batch * s.heads * s.seq) return;  // the whole warp leaves together
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const auto [i, token0, col, kv_col] = query_row(row, s);

  float qi[kPerLane];
  load_row(q + (token0 + i) * q_ld + col, s.head_dim, lane, qi);
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) qi[e] *= s.scale;
  float acc[kPerLane] = {};
  float max = -INFINITY;
  float sum = 0.0f;
  for (std::int64_t j = 0; j <= i; ++j) {
    const float score = warp_dot(qi, k + (token0 + j) * k_ld + kv_col, s.head_dim, lane);
    const float new_max = fmaxf(max, score);
    const float correction = expf(max - new_max);
    const float p = expf(score - new_max);
    sum = sum * correction + p;
    const T* vj = v + (token0 + j) * v_ld + kv_col;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int d = lane + kWarpSize * e;
      if (d < s.head_dim) acc[e] = acc[e] * correction + p * to_float(vj[d]);
    }
    max = new_max;
  }
  store_row(acc, 1.0f / sum, s.head_dim, lane, out + (token0 + i) * s.heads * s.head_dim + col);
  const float row_lse = max + logf(sum);
  if (lane == 0) lse[row] = row_lse;
  if (probs != nullptr) {
    T* pr = probs + row * s.seq;
    for (std::int64_t j = 0; j <= i; ++j) {
      const float score = warp_dot(qi, k + (token0 + j) * k_ld + kv_col, s.head_dim, lane);
      if (lane == j % kWarpSize) pr[j] = from_float<T>(expf(score - row_lse));
    }
    for (std::int64_t j = i + 1 + lane; j < s.seq; j += kWarpSize) pr[j] = from_float<T>(0.0f);
  }
}

struct Grads {
  const float* lse;
  std::int64_t dq_ld;
  std::int64_t dk_ld;
  std::int64_t dv_ld;
};

// One warp per query row (b, h, i):  dq_i = scale * sum_{j<=i} p_ij (dout_i.v_j - dout_i.out_i) k_j
template <typename T>
__global__ void dq_kernel(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                          std::int64_t v_ld, const T* out, const T* dout, const T* probs, Shape s,
                          Grads g, T* dq) {
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (row >= s.batch * s.heads * s.seq) return;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const auto [i, token0, col, kv_col] = query_row(row, s);
  const std::int64_t out_ld = s.heads * s.head_dim;

  float qi[kPerLane];
  float doi[kPerLane];
  load_row(q + (token0 + i) * q_ld + col, s.head_dim, lane, qi);
  load_row(dout + (token0 + i) * out_ld + col, s.head_dim, lane, doi);
  const float delta = warp_dot(doi, out + (token0 + i) * out_ld + col, s.head_dim, lane);
  const float row_lse = g.lse[row];
  float acc[kPerLane] = {};
  for (std::int64_t j = 0; j <= i; ++j) {
    const T* kj = k + (token0 + j) * k_ld + kv_col;
    const float p = probs != nullptr ? to_float(probs[row * s.seq + j])
                                     : expf(s.scale * warp_dot(qi, kj, s.head_dim, lane) - row_lse);
    const float ds =
        p * (warp_dot(doi, v + (token0 + j) * v_ld + kv_col, s.head_dim, lane) - delta);
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int d = lane + kWarpSize * e;
      if (d < s.head_dim) acc[e] += ds * to_float(kj[d]);
    }
  }
  store_row(acc, s.scale, s.head_dim, lane, dq + (token0 + i) * g.dq_ld + col);
}

// One warp per key row (b, kv head, j), summing over the query heads of its group and the
// queries i >= j:  dv_j = sum p_ij dout_i,  dk_j = scale * sum p_ij (dout_i.v_j - dout_i.out_i) q_i
template <typename T>
__global__ void dkv_kernel(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                           std::int64_t v_ld, const T* out, const T* dout, const T* probs, Shape s,
                           Grads g, T* dk, T* dv) {
  const std::int64_t kv_heads = s.heads / s.group;
  const std::int64_t kv_row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (kv_row >= s.batch * kv_heads * s.seq) return;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const std::int64_t j = kv_row % s.seq;
  const std::int64_t kv_head = kv_row / s.seq % kv_heads;
  const std::int64_t b = kv_row / (s.seq * kv_heads);
  const std::int64_t token0 = b * s.seq;
  const std::int64_t kv_col = kv_head * s.head_dim;
  const std::int64_t out_ld = s.heads * s.head_dim;

  float kj[kPerLane];
  float vj[kPerLane];
  load_row(k + (token0 + j) * k_ld + kv_col, s.head_dim, lane, kj);
  load_row(v + (token0 + j) * v_ld + kv_col, s.head_dim, lane, vj);
  float dk_acc[kPerLane] = {};
  float dv_acc[kPerLane] = {};
  for (std::int64_t h = kv_head * s.group; h < (kv_head + 1) * s.group; ++h) {
    const std::int64_t col = h * s.head_dim;
    for (std::int64_t i = j; i < s.seq; ++i) {
      const std::int64_t row = (b * s.heads + h) * s.seq + i;
      const T* qi = q + (token0 + i) * q_ld + col;
      float doi[kPerLane];
      load_row(dout + (token0 + i) * out_ld + col, s.head_dim, lane, doi);
      const float p = probs != nullptr
                          ? to_float(probs[row * s.seq + j])
                          : expf(s.scale * warp_dot(kj, qi, s.head_dim, lane) - g.lse[row]);
      const float delta = warp_dot(doi, out + (token0 + i) * out_ld + col, s.head_dim, lane);
      float dp = 0.0f;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) dp += doi[e] * vj[e];
      const float ds = p * (detail::warp_reduce(dp, detail::Sum{}) - delta);
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) {
        const int d = lane + kWarpSize * e;
        if (d < s.head_dim) {
          dv_acc[e] += p * doi[e];
          dk_acc[e] += ds * to_float(qi[d]);
        }
      }
    }
  }
  store_row(dk_acc, s.scale, s.head_dim, lane, dk + (token0 + j) * g.dk_ld + kv_col);
  store_row(dv_acc, 1.0f, s.head_dim, lane, dv + (token0 + j) * g.dv_ld + kv_col);
}

Shape make_shape(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads,
                 std::int64_t head_dim) {
  if (kv_heads <= 0 || heads <= 0 || heads % kv_heads != 0) {
    throw std::invalid_argument("attention: heads (" + std::to_string(heads) +
                                ") must be a positive multiple of kv_heads (" +
                                std::to_string(kv_heads) + ")");
  }
  if (head_dim < 1 || head_dim > kMaxHeadDim) {
    throw std::invalid_argument("attention: head_dim " + std::to_string(head_dim) +
                                " is outside [1, " + std::to_string(kMaxHeadDim) + "]");
  }
  return Shape{batch,
               seq,
               heads,
               heads / kv_heads,
               static_cast<int>(head_dim),
               1.0f / std::sqrt(static_cast<float>(head_dim))};
}

int blocks_for_rows(std::int64_t rows, const char* what) {
  return detail::to_int((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, what);
}

template <typename T>
void forward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
             std::int64_t v_ld, std::int64_t batch, std::int64_t seq, std::int64_t heads,
             std::int64_t kv_heads, std::int64_t head_dim, T* out, float* lse, T* probs,
             cudaStream_t stream) {
  const Shape s = make_shape(batch, seq, heads, kv_heads, head_dim);
  if (batch == 0 || seq == 0) return;
  forward_kernel<<<blocks_for_rows(batch * heads * seq, "attention_forward"),
                   kWarpsPerBlock * kWarpSize, 0, stream>>>(q, q_ld, k, k_ld, v, v_ld, s, out, lse,
                                                            probs);
  detail::check_launch("attention_forward");
}

template <typename T>
void backward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
              std::int64_t v_ld, const T* out, const T* dout, const float* lse, const T* probs,
              std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads,
              std::int64_t head_dim, T* dq, std::int64_t dq_ld, T* dk, std::int64_t dk_ld, T* dv,
              std::int64_t dv_ld, cudaStream_t stream) {
  const Shape s = make_shape(batch, seq, heads, kv_heads, head_dim);
  if (batch == 0 || seq == 0) return;
  const Grads g{lse, dq_ld, dk_ld, dv_ld};
  constexpr int kThreads = kWarpsPerBlock * kWarpSize;
  dq_kernel<<<blocks_for_rows(batch * heads * seq, "attention_backward (dq)"), kThreads, 0,
              stream>>>(q, q_ld, k, k_ld, v, v_ld, out, dout, probs, s, g, dq);
  detail::check_launch("attention_backward (dq)");
  dkv_kernel<<<blocks_for_rows(batch * kv_heads * seq, "attention_backward (dk, dv)"), kThreads, 0,
               stream>>>(q, q_ld, k, k_ld, v, v_ld, out, dout, probs, s, g, dk, dv);
  detail::check_launch("attention_backward (dk, dv)");
}

}  // namespace

void attention_forward(const float* q, std::int64_t q_ld, const float* k, std::int64_t k_ld,
                       const float* v, std::int64_t v_ld, std::int64_t batch, std::int64_t seq,
                       std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, float* out,
                       float* lse, float* probs, cudaStream_t stream) {
  forward(q, q_ld, k, k_ld, v, v_ld, batch, seq, heads, kv_heads, head_dim, out, lse, probs,
          stream);
}

void attention_forward(const __nv_bfloat16* q, std::int64_t q_ld, const __nv_bfloat16* k,
                       std::int64_t k_ld, const __nv_bfloat16* v, std::int64_t v_ld,
                       std::int64_t batch, std::int64_t seq, std::int64_t heads,
                       std::int64_t kv_heads, std::int64_t head_dim, __nv_bfloat16* out, float* lse,
                       __nv_bfloat16* probs, cudaStream_t stream) {
  forward(q, q_ld, k, k_ld, v, v_ld, batch, seq, heads, kv_heads, head_dim, out, lse, probs,
          stream);
}

void attention_backward(const float* q, std::int64_t q_ld, const float* k, std::int64_t k_ld,
                        const float* v, std::int64_t v_ld, const float* out, const float* dout,
                        const float* lse, const float* probs, std::int64_t batch, std::int64_t seq,
                        std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, float* dq,
                        std::int64_t dq_ld, float* dk, std::int64_t dk_ld, float* dv,
                        std::int64_t dv_ld, cudaStream_t stream) {
  backward(q, q_ld, k, k_ld, v, v_ld, out, dout, lse, probs, batch, seq, heads, kv_heads, head_dim,
           dq, dq_ld, dk, dk_ld, dv, dv_ld, stream);
}

void attention_backward(const __nv_bfloat16* q, std::int64_t q_ld, const __nv_bfloat16* k,
                        std::int64_t k_ld, const __nv_bfloat16* v, std::int64_t v_ld,
                        const __nv_bfloat16* out, const __nv_bfloat16* dout, const float* lse,
                        const __nv_bfloat16* probs, std::int64_t batch, std::int64_t seq,
                        std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                        __nv_bfloat16* dq, std::int64_t dq_ld, __nv_bfloat16* dk,
                        std::int64_t dk_ld, __nv_bfloat16* dv, std::int64_t dv_ld,
                        cudaStream_t stream) {
  backward(q, q_ld, k, k_ld, v, v_ld, out, dout, lse, probs, batch, seq, heads, kv_heads, head_dim,
           dq, dq_ld, dk, dk_ld, dv, dv_ld, stream);
}

}  // namespace tandem::kernels::cuda
