#pragma once
// Causal scaled-dot-product attention with grouped-query heads on a CUDA stream.
//
// Same contract as kernels/cpu/attention.h: token t of sequence b is row b*seq + t; query head h
// occupies columns [h*head_dim, (h+1)*head_dim) of q's row (kv head g the same columns of k, v);
// *_ld = elements between consecutive rows; query head h reads kv head h / (heads / kv_heads).
// scale = 1/sqrt(head_dim), keys j <= query i.
//   out   dense [batch*seq, heads*head_dim]        (dout has the same layout)
//   lse   [batch, heads, seq] log-sum-exp of the scaled masked scores, float
//   probs [batch, heads, seq, seq] softmax with zeros above the diagonal, written when not
//         nullptr; the backward reads it when not nullptr, else recomputes it from q, k, lse
// Backward OVERWRITES dq, dk, dv; dk and dv sum over the query heads sharing a kv head.
//
// Storage: q, k, v, out, dout, probs, dq, dk, dv are float or bf16 (all the same); lse is float;
// all arithmetic is float. One warp per query row (forward, dq) or key row (dk, dv) streaming
// over the other side with an online softmax: deterministic, no workspace, no atomics, but not
// tiled like FlashAttention, so it is memory-bound on long sequences.
// Throws std::invalid_argument when heads is not a positive multiple of kv_heads or head_dim is
// outside [1, 256]; std::runtime_error when a launch fails.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void attention_forward(const float* q, std::int64_t q_ld, const float* k, std::int64_t k_ld,
                       const float* v, std::int64_t v_ld, std::int64_t batch, std::int64_t seq,
                       std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, float* out,
                       float* lse, float* probs, cudaStream_t stream);
void attention_forward(const __nv_bfloat16* q, std::int64_t q_ld, const __nv_bfloat16* k,
                       std::int64_t k_ld, const __nv_bfloat16* v, std::int64_t v_ld,
                       std::int64_t batch, std::int64_t seq, std::int64_t heads,
                       std::int64_t kv_heads, std::int64_t head_dim, __nv_bfloat16* out, float* lse,
                       __nv_bfloat16* probs, cudaStream_t stream);

void attention_backward(const float* q, std::int64_t q_ld, const float* k, std::int64_t k_ld,
                        const float* v, std::int64_t v_ld, const float* out, const float* dout,
                        const float* lse, const float* probs, std::int64_t batch, std::int64_t seq,
                        std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, float* dq,
                        std::int64_t dq_ld, float* dk, std::int64_t dk_ld, float* dv,
                        std::int64_t dv_ld, cudaStream_t stream);
void attention_backward(const __nv_bfloat16* q, std::int64_t q_ld, const __nv_bfloat16* k,
                        std::int64_t k_ld, const __nv_bfloat16* v, std::int64_t v_ld,
                        const __nv_bfloat16* out, const __nv_bfloat16* dout, const float* lse,
                        const __nv_bfloat16* probs, std::int64_t batch, std::int64_t seq,
                        std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                        __nv_bfloat16* dq, std::int64_t dq_ld, __nv_bfloat16* dk,
                        std::int64_t dk_ld, __nv_bfloat16* dv, std::int64_t dv_ld,
                        cudaStream_t stream);

}  // namespace tandem::kernels::cuda
