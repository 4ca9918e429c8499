#pragma once
// Causal scaled-dot-product attention with grouped-query heads on the CPU (float32).
//
// Layout: token t of sequence b is row b*seq + t. In that row, query head h occupies columns
// [h*head_dim, (h+1)*head_dim) of q, and kv head g the same columns of k and v. q_ld, k_ld, v_ld
// (and dq_ld, dk_ld, dv_ld) are the elements between consecutive rows, so Q, K and V may be
// column slices of one fused QKV projection. Query head h reads kv head h / (heads / kv_heads);
// heads must be a multiple of kv_heads.
//
// Forward: s[i,j] = q_i . k_j / sqrt(head_dim) for keys j <= i (causal mask), p = softmax_j(s),
// out_i = sum_j p[i,j] v_j.
//   out   dense [batch*seq, heads*head_dim]
//   lse   [batch, heads, seq], log-sum-exp of the scaled masked scores (for the backward pass)
//   probs [batch, heads, seq, seq] softmax probabilities with zeros above the diagonal, written
//         only when probs != nullptr
//
// Backward: out and dout are dense [batch*seq, heads*head_dim] like the forward's out.
// dq, dk, dv are OVERWRITTEN (dk, dv with kv_heads*head_dim columns); dk and dv sum the
// contributions of every query head sharing the kv head. probs may be nullptr, in which case the
// probabilities are recomputed from q, k and lse.
// Throws std::invalid_argument when heads is not a positive multiple of kv_heads.

#include <cstdint>

namespace tandem::kernels::cpu {

void attention_forward(const float* q, std::int64_t q_ld, const float* k, std::int64_t k_ld,
                       const float* v, std::int64_t v_ld, std::int64_t batch, std::int64_t seq,
                       std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, float* out,
                       float* lse, float* probs);

void attention_backward(const float* q, std::int64_t q_ld, const float* k, std::int64_t k_ld,
                        const float* v, std::int64_t v_ld, const float* out, const float* dout,
                        const float* lse, const float* probs, std::int64_t batch, std::int64_t seq,
                        std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim, float* dq,
                        std::int64_t dq_ld, float* dk, std::int64_t dk_ld, float* dv,
                        std::int64_t dv_ld);

}  // namespace tandem::kernels::cpu
