#include "shared/ring_self_attention.h"

#include <functional>

#include "shared/ring_attention.h"

namespace tandem {
namespace {

constexpr int kKTag = 5;  // the key blocks (ring attention uses 3 and 4, the pipeline 0 and 1)
constexpr int kVTag = 6;  // the value blocks

int sp_peer(const StepState& st, int delta) {
  RankCoord c = st.coord;
  c.sp = (c.sp + delta + st.grid.sp()) % st.grid.sp();
  return st.grid.rank(c);
}

std::array<int64_t, 6> dims(const StepDims& d, int64_t block) {
  return {d.batch, d.seq, d.heads, d.head_dim, d.sp, block};
}

int64_t score_elements(const StepDims& d) { return d.batch * d.heads * d.seq * d.seq * d.sp; }
int64_t block_elements(const StepDims& d) { return d.n_local * d.heads * d.head_dim; }

// One pass of `block` around the ring: at step j the block of rank i-j is handed to `step`; from
// step 1 on it arrived from rank i-1 after step j-1's kernel (Colossal-AI's ring_forward).
void ring_pass(StepState& st, int l, int mb, BufferId block, int tag, const std::function<TaskId(int64_t, BufferId)>& step) {
  const StepDims& d = st.dims;
  const int sp = d.sp, i = st.coord.sp;
  const int next = sp_peer(st, +1), prev = sp_peer(st, -1);
  BufferId held = block;
  for (int j = 0; j < sp; ++j) {
    const TaskId k = step((i - j + sp) % sp, held);
    if (j + 1 < sp) {
      BufferId incoming = st.allocate(tag == kKTag ? "k_recv" : "v_recv", l, mb, block_elements(d), d.dtype, BufferRole::kComm);
      ring_exchange(st, next, held, prev, incoming, tag, mb, {k});
      st.release(held);
      held = incoming;
    }
  }
  st.release(held);
}

void all_reduce_sp(StepState& st, int l, int mb, BufferId b, int64_t elements) {
  const StepDims& d = st.dims;
  Collective c;
  c.op = CollectiveOp::kAllReduce;
  c.group = st.sp_group();
  c.bytes = elements * dtype_bytes(d.dtype);
  c.dtype = d.dtype;
  c.phase = Phase::kBackward;
  c.layer = l;
  c.microbatch = mb;
  c.buffers = {b, b};
  st.program.collective(std::move(c), Stream::kComm);
}

}  // namespace

void ring_self_attention_forward(StepState& st, Phase ph, LayerActs& a) {
  const StepDims& d = st.dims;
  const int l = a.layer, mb = a.mb, i = st.coord.sp;
  BufferId k = st.allocate("k_block", l, mb, block_elements(d), d.dtype, BufferRole::kComm);
  BufferId v = st.allocate("v_block", l, mb, block_elements(d), d.dtype, BufferRole::kComm);
  st.kernel(Kernel::kRingSelfPack, ph, l, mb, dims(d, i), {a.qkv}, {k, v}, 0, d.dtype);
  BufferId scores = st.allocate("scores", l, mb, score_elements(d), d.dtype);
  ring_pass(st, l, mb, k, kKTag, [&](int64_t src, BufferId held) {
    return st.kernel(Kernel::kRingSelfScores, ph, l, mb, dims(d, src), {a.qkv, held}, {scores}, 0, d.dtype);
  });
  a.probs = st.allocate("probs", l, mb, score_elements(d), d.dtype);
  st.kernel(Kernel::kRingSelfSoftmax, ph, l, mb, dims(d, i), {scores}, {a.probs}, kCausal, d.dtype);
  st.release(scores);
  bool first = true;
  ring_pass(st, l, mb, v, kVTag, [&](int64_t src, BufferId held) {
    const TaskId t = st.kernel(Kernel::kRingSelfContext, ph, l, mb, dims(d, src), {a.probs, held}, {a.ctx},
                               first ? 0 : kAccumulateOut, d.dtype);
    first = false;
    return t;
  });
}

BufferId ring_self_attention_backward(StepState& st, const LayerActs& a, BufferId dctx) {
  const StepDims& d = st.dims;
  const int l = a.layer, mb = a.mb, i = st.coord.sp;
  const Phase ph = Phase::kBackward;
  const int64_t full = d.batch * d.seq * d.sp * d.heads * d.head_dim;  // b*s*h
  BufferId k = st.allocate("k_block", l, mb, block_elements(d), d.dtype, BufferRole::kComm);
  BufferId v = st.allocate("v_block", l, mb, block_elements(d), d.dtype, BufferRole::kComm);
  st.kernel(Kernel::kRingSelfPack, ph, l, mb, dims(d, i), {a.qkv}, {k, v}, 0, d.dtype);
  // RingAV.backward: dV of the whole sequence, all-reduced; dprobs one value block per step.
  BufferId dv_full = st.allocate("dv_full", l, mb, full, d.dtype, BufferRole::kComm);
  st.kernel(Kernel::kRingSelfGradV, ph, l, mb, dims(d, i), {a.probs, dctx}, {dv_full}, 0, d.dtype);
  all_reduce_sp(st, l, mb, dv_full, full);
  BufferId dprobs = st.allocate("dprobs", l, mb, score_elements(d), d.dtype);
  ring_pass(st, l, mb, v, kVTag, [&](int64_t src, BufferId held) {
    return st.kernel(Kernel::kRingSelfGradProbs, ph, l, mb, dims(d, src), {dctx, held}, {dprobs}, 0, d.dtype);
  });
  BufferId dscores = st.allocate("dscores", l, mb, score_elements(d), d.dtype);
  st.kernel(Kernel::kRingSelfSoftmaxBwd, ph, l, mb, dims(d, i), {a.probs, dprobs}, {dscores}, 0, d.dtype);
  st.release(dprobs);
  // RingQK.backward: dK of the whole sequence, all-reduced; dQ one key block per step.
  BufferId dk_full = st.allocate("dk_full", l, mb, full, d.dtype, BufferRole::kComm);
  st.kernel(Kernel::kRingSelfGradK, ph, l, mb, dims(d, i), {dscores, a.qkv}, {dk_full}, 0, d.dtype);
  all_reduce_sp(st, l, mb, dk_full, full);
  BufferId dqkv = st.allocate("dqkv", l, mb, d.n_local * d.qkv_out, d.dtype);
  bool first = true;
  ring_pass(st, l, mb, k, kKTag, [&](int64_t src, BufferId held) {
    const TaskId t = st.kernel(Kernel::kRingSelfGradQ, ph, l, mb, dims(d, src), {dscores, held}, {dqkv},
                               first ? 0 : kAccumulateOut, d.dtype);
    first = false;
    return t;
  });
  st.release(dscores);
  st.kernel(Kernel::kRingSelfUnpack, ph, l, mb, dims(d, i), {dk_full, dv_full}, {dqkv}, 0, d.dtype);
  st.release(dk_full);
  st.release(dv_full);
  return dqkv;
}

}  // namespace tandem
