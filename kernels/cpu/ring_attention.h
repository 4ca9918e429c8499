#pragma once
// Blockwise causal attention for ring attention (context parallelism with the zig-zag split, as
// Megatron-Core and Transformer Engine run it; the online softmax of FlashAttention, Dao et al.
// 2022, and of Liu et al. 2023, "Ring Attention with Blockwise Transformers", arXiv 2310.01889).
//
// A rank of an sp-rank ring holds 2c tokens of each sequence: chunk i and chunk 2*sp-1-i of the
// 2*sp equal chunks, rows [0, c) and [c, 2c) of its buffers (row b*2c + r of sample b). Its
// queries meet one block of keys and values per ring step, the local block first; in global
// positions every key of chunk i precedes every key of chunk 2*sp-1-i, so:
//   mode 0 (local block):       queries rows [0, 2c) x keys rows [0, 2c), causal on the row index;
//   mode 1 (block of rank < i): queries rows [0, 2c) x keys rows [0, c), no mask (its second
//                               chunk follows both of ours);
//   mode 2 (block of rank > i): queries rows [c, 2c) x keys rows [0, 2c), no mask (its first
//                               chunk follows our first one, its second precedes our second).
// Every step of modes 1 and 2 does the same 2c*c*heads dot products, which balances the ring.
//
// Forward: the block's softmax output o_b and log-sum-exp l_b merged into the running (out, lse)
// over the rows the mode touches: l = log(e^lse + e^l_b), out = out e^(lse-l) + o_b e^(l_b-l);
// with merge false they are written instead. lse is [batch, heads, 2c]; out is
// [batch*2c, heads*head_dim]; q, k, v rows as in kernels/cpu/attention.h (ld: elements between
// rows; query head h reads kv head h / (heads/kv_heads)); scale 1/sqrt(head_dim).
// Backward: with the final out and lse (over the whole sequence), p = e^(s - lse),
// D = rowsum(dout * out), dv += p^T dout, dq += scale (p (dout v^T - D)) k, dk += scale (...)^T q:
// dq, dk and dv are ACCUMULATED (+=).
// Templates over float (the host driver) and double (the tests), instantiated for both.

#include <cstdint>

namespace tandem::kernels::cpu {

struct RingBlock {
  std::int64_t batch = 0, chunk = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int mode = 0;  // 0 local causal, 1 keys of an earlier rank, 2 keys of a later rank
};

template <class T>
void ring_attention_forward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                            std::int64_t v_ld, const RingBlock& s, bool merge, T* out, T* lse);

template <class T>
void ring_attention_backward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                             std::int64_t v_ld, const T* out, const T* dout, const T* lse, const RingBlock& s,
                             T* dq, std::int64_t dq_ld, T* dk, std::int64_t dk_ld, T* dv, std::int64_t dv_ld);

// The K and V columns of rows x [q_cols | kv_cols | kv_cols] (row length q_cols + 2 kv_cols):
// kv_pack copies them out into kv [rows, 2 kv_cols]; kv_unpack writes dkv back into them.
void kv_pack(const float* qkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols, float* kv);
void kv_unpack(const float* dkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols, float* dqkv);

// The rows a mode gives queries and keys: [*q0, *q0 + *qn) and [*k0, *k0 + *kn); causal for mode 0.
void ring_block_rows(const RingBlock& s, std::int64_t* q0, std::int64_t* qn, std::int64_t* k0, std::int64_t* kn);

}  // namespace tandem::kernels::cpu
