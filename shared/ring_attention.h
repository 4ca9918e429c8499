// Ring attention over the sp axis (strategy.sp_mode ring_attention), as Megatron-Core's context
// parallelism runs it through Transformer Engine (AttnFuncWithCPAndKVP2P): each of the sp ranks
// keeps 2c = s/sp tokens of every sequence, chunks i and 2*sp-1-i of the zig-zag split
// (shared/sequence_split.h), and its queries meet the keys and values of every rank one block per
// ring step, merged by the log-sum-exp of the online softmax (Kernel::kRingAttention).
//
// Forward, per layer and micro-batch: the K and V columns of the local QKV are packed into a block
// [2c*b, 2 h_kv] (Kernel::kKvPack); at step j the block of rank i-j is multiplied while the next
// one travels: the send of the held block to rank i+1 and the receive of the next from rank i-1
// (streams kTpSend/kTpRecv, shared with Megatron-SP's overlap, which excludes this mode) are issued
// before the step's kernel. sp-1 transfers of b*(s/sp)*2 h_kv elements.
// Backward: the blocks travel the ring again (sp-1 transfers), each with the fp32 sum of its dK, dV
// so far: rank i adds its part and sends it on, and after sp steps the sum is back home (sp fp32
// transfers), written into dQKV's K and V columns (Kernel::kKvUnpack). The volumes are the
// closed forms of docs/sequence.md.
#pragma once

#include <initializer_list>

#include "shared/step_state.h"

namespace tandem {

// One ring exchange over the sp group: send `out` to rank i+1 and receive `in` from rank i-1,
// posted in the order of the rank's parity: even ranks send first, odd ranks receive first
// (Colossal-AI's ring_forward, colossalai/legacy/communication/ring.py, orders its two ops by
// parity too). A consumer that keeps one communication in flight per rank and blocks in a receive
// (ASTRA-sim) then never waits in a cycle: every odd rank's receive meets an even rank's send that
// came first, and an even rank's receive meets the send of an odd rank that has received already
// (or, for rank 0 of an odd ring, of the even rank sp-1, which sends first). Streams and the data
// each task touches are the same in either order: only the program order (Chakra's chain)
// changes. `after`: tasks both wait for besides their data (none: the transfer may overlap).
void ring_exchange(StepState& st, int next, BufferId out, int prev, BufferId in, int tag, int mb,
                   std::initializer_list<TaskId> after = {});

// a.ctx and a.lse (allocated by the caller) <- attention of a.qkv over the whole sequence.
void ring_attention_forward(StepState& st, Phase ph, LayerActs& a);
// dQKV (a new buffer [n_local, qkv_out]) from the context's gradient dctx.
BufferId ring_attention_backward(StepState& st, const LayerActs& a, BufferId dctx);

}  // namespace tandem
