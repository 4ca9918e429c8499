// Colossal-AI's ring self-attention over the sp axis (strategy.sp_mode ring; Li et al. 2021,
// "Sequence Parallelism: Long Sequence Training from System Perspective", arXiv 2105.13120;
// colossalai/legacy/nn/layer/parallel_sequence/_operation.py RingQK and RingAV, layers.py
// TransformerSelfAttentionRing, commit 4f9953b). Each of the sp ranks holds the contiguous chunk
// of c = s/sp tokens of every sequence (shared/sequence_split.h).
//
// Forward, per layer and micro-batch on rank i (kernels/cpu/ring_self_attention.h):
//  - the K and V columns of the local QKV packed into blocks [b*c, h] (Kernel::kRingSelfPack);
//  - RingQK: the scores [b, a, c, s] filled one key block per step, the local one first, then the
//    block of rank i-j at step j (sp-1 ring transfers of b*c*h elements);
//  - the causal scale-mask-softmax over the whole row (kept for the backward: the probabilities);
//  - RingAV: the context accumulated one value block per step (sp-1 transfers of b*c*h).
// Backward (RingAV.backward, then the softmax's, then RingQK.backward):
//  - dV over the whole sequence = probs^T dctx, all-reduced over the sp group, this rank's rows kept;
//  - dprobs filled one value block per step (sp-1 transfers); the softmax backward;
//  - dK over the whole sequence = dscores^T Q, all-reduced; dQ accumulated one key block per step
//    (sp-1 transfers); dK, dV rows written into dQKV (Kernel::kRingSelfUnpack).
// Per layer and micro-batch a rank sends 2(sp-1) blocks forward, 2(sp-1) backward and joins two
// all-reduces of b*s*h elements. As Colossal-AI's ring_forward blocks (it waits for the exchange
// and synchronizes the device), a step's transfer starts after the previous step's kernel: no
// overlap of the ring with the compute (unlike ring attention's, shared/ring_attention.h).
// Colossal-AI divides dQ, dK and dV by sp (its loss convention); tandem's gradients are those of
// the global loss, so the all-reduce sums without the division. Its norm factor is sqrt(hidden);
// tandem scales by 1/sqrt(head_dim), as the whole-sequence attention it must equal.
#pragma once

#include "shared/step_state.h"

namespace tandem {

// a.ctx (allocated by the caller) <- attention of a.qkv over the whole sequence; keeps the
// probabilities in a.probs.
void ring_self_attention_forward(StepState& st, Phase ph, LayerActs& a);
// dQKV (a new buffer [n_local, qkv_out]) from the context's gradient dctx.
BufferId ring_self_attention_backward(StepState& st, const LayerActs& a, BufferId dctx);

}  // namespace tandem
