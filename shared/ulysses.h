// DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv 2309.14509, section 3.1): between the attention
// blocks each of the sp ranks holds a chunk of the sequence with every head; around the attention
// core an all-to-all over the sequence group turns Q, K, V into the whole sequence with heads/sp
// heads (kv heads/sp for K and V), and another turns the context back. The backward runs the
// same exchanges on the gradients, in the other direction.
//
// Each exchange is a pack kernel (the blocks in rank order), the all-to-all on the comm stream,
// and an unpack kernel (Kernel::kAllToAllPack/Unpack, shared/schedule.h). Per layer and
// micro-batch a rank's all-to-all buffers hold b*(s/sp)*(h + 2 h_kv) elements for Q, K, V and
// b*(s/sp)*h for the context (h, h_kv: the tensor rank's heads times head_dim), forward and
// backward alike; each sends (sp-1)/sp of it (the paper's 4Nh/P per link, section 3.2).
#pragma once

#include "shared/step_state.h"

namespace tandem {

// a.qkv (sequence split) -> the head-split Q, K, V the attention reads; frees the former.
void ulysses_qkv_to_heads(StepState& st, Phase ph, LayerActs& a);
// a.ctx (head split) -> a.ctx_seq (sequence split, the o projection's input); keeps a.ctx.
void ulysses_ctx_to_seq(StepState& st, Phase ph, LayerActs& a);
// Backward: the context's gradient (sequence split) -> head split; frees dctx.
BufferId ulysses_dctx_to_heads(StepState& st, const LayerActs& a, BufferId dctx);
// Backward: dQ, dK, dV (head split) -> sequence split; frees dqkv.
BufferId ulysses_dqkv_to_seq(StepState& st, const LayerActs& a, BufferId dqkv);

}  // namespace tandem
