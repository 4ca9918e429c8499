#pragma once
// Colossal-AI's ring self-attention (Li et al. 2021, "Sequence Parallelism: Long Sequence Training
// from System Perspective", arXiv 2105.13120; colossalai/legacy/nn/layer/parallel_sequence/
// _operation.py, RingQK and RingAV) on the CPU, one ring step per call.
//
// A rank of an sp-rank ring holds the contiguous chunk `rank` of c tokens of each sequence (row
// b*c + t of its buffers). The attention scores of its queries against the whole sequence of
// s = sp*c keys are filled one key block per ring step, then multiplied by the value blocks one per
// ring step. Multi-head only (heads = kv heads, as Colossal-AI's layer: its QKV is 3*hidden).
//
// Layouts (D = heads*head_dim; head h occupies columns [h*head_dim, (h+1)*head_dim) of a segment):
//   q, k, v rows [b*c, ld] (ld: elements between rows, so they may be columns of the fused QKV)
//   scores, probs and their gradients [b, heads, c, s]: row (b, h, q), key column j of the sequence
//   ctx [b*c, D]; dk_full, dv_full [b*s, D]: every token of the sequence (all-reduced over the ring)
// `block` is the key block a step handles (the rank it came from), or this rank's own chunk for
// the softmax (the causal offset) and for unpacking its rows of dk_full, dv_full.
//
// Forward, per layer: scores[:, :, block] = Q K_block^T (sp steps); probs = softmax(scale *
// scores) with the causal mask (key j <= query rank*c + q), scale 1/sqrt(head_dim); ctx +=
// probs[:, :, block] V_block (sp steps).
// Backward (RingAV.backward, RingQK.backward): dv_full = probs^T dctx; dprobs[:, :, block] =
// dctx V_block^T (sp steps); dscores = scale * probs o (dprobs - rowsum(probs o dprobs));
// dk_full = dscores^T Q; dq += dscores[:, :, block] K_block (sp steps).
// Templates over float (the host driver) and double (the tests), instantiated for both.

#include <cstdint>

namespace tandem::kernels::cpu {

struct RingSelfShape {
  std::int64_t batch = 0, chunk = 0, heads = 0, head_dim = 0, sp = 0, block = 0;
  std::int64_t seq() const { return sp * chunk; }
  std::int64_t cols() const { return heads * head_dim; }
};

// scores[:, :, block*c + t] = q . k_t (unscaled), for the c keys of the block.
template <class T>
void ring_self_scores(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const RingSelfShape& s, T* scores);
// probs = causal softmax of scale * scores over the whole row (block: this rank's chunk).
template <class T>
void ring_self_softmax(const T* scores, const RingSelfShape& s, T* probs);
// ctx (+)= probs[:, :, block] v (accumulate: +=, else =).
template <class T>
void ring_self_context(const T* probs, const T* v, std::int64_t v_ld, const RingSelfShape& s, bool accumulate, T* ctx);
// dv_full [b*s, D] = probs^T dctx (every key of the sequence, this rank's queries' part).
template <class T>
void ring_self_grad_v(const T* probs, const T* dctx, const RingSelfShape& s, T* dv_full);
// dprobs[:, :, block*c + t] = dctx . v_t.
template <class T>
void ring_self_grad_probs(const T* dctx, const T* v, std::int64_t v_ld, const RingSelfShape& s, T* dprobs);
// dscores = scale * probs o (dprobs - rowsum(probs o dprobs)): the gradient of the raw scores.
template <class T>
void ring_self_softmax_backward(const T* probs, const T* dprobs, const RingSelfShape& s, T* dscores);
// dk_full [b*s, D] = dscores^T q.
template <class T>
void ring_self_grad_k(const T* dscores, const T* q, std::int64_t q_ld, const RingSelfShape& s, T* dk_full);
// dq (+)= dscores[:, :, block] k (accumulate: +=, else =).
template <class T>
void ring_self_grad_q(const T* dscores, const T* k, std::int64_t k_ld, const RingSelfShape& s, bool accumulate, T* dq,
                      std::int64_t dq_ld);

// The K and V columns of the fused qkv [b*c, 3D] out into k, v [b*c, D]; and back: this rank's
// rows (chunk `block`) of dk_full, dv_full into the K and V columns of dqkv.
void ring_self_pack(const float* qkv, const RingSelfShape& s, float* k, float* v);
void ring_self_unpack(const float* dk_full, const float* dv_full, const RingSelfShape& s, float* dqkv);

}  // namespace tandem::kernels::cpu
