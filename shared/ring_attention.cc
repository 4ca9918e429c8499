#include "shared/ring_attention.h"

#include <string>

namespace tandem {
namespace {

constexpr int kKvTag = 3;   // the K/V blocks (shared/tp_overlap.cc uses 2, the pipeline 0 and 1)
constexpr int kDkvTag = 4;  // the dK/dV sums of the backward

int sp_peer(const StepState& st, int delta) {
  RankCoord c = st.coord;
  c.sp = (c.sp + delta + st.grid.sp()) % st.grid.sp();
  return st.grid.rank(c);
}

// Mode of step j on rank i: 0 local, 1 the block of an earlier rank, 2 of a later one.
int64_t mode_of(int i, int j, int sp) {
  const int src = (i - j + sp) % sp;
  return j == 0 ? 0 : (src < i ? 1 : 2);
}

int64_t kv_cols(const StepDims& d) { return d.kv_heads * d.head_dim; }

std::array<int64_t, 6> step_dims(const StepDims& d, int64_t mode) {
  return {d.batch, d.seq / 2, d.heads, d.kv_heads, d.head_dim, mode};
}

BufferId pack_kv(StepState& st, Phase ph, const LayerActs& a) {
  const StepDims& d = st.dims;
  BufferId kv = st.allocate("kv_block", a.layer, a.mb, d.n_local * 2 * kv_cols(d), d.dtype, BufferRole::kComm);
  st.kernel(Kernel::kKvPack, ph, a.layer, a.mb, {d.n_local, d.heads * d.head_dim, kv_cols(d)}, {a.qkv}, {kv}, 0,
            d.dtype);
  return kv;
}

}  // namespace

void ring_exchange(StepState& st, int next, BufferId out, int prev, BufferId in, int tag, int mb,
                   std::initializer_list<TaskId> after) {
  const bool even = st.coord.sp % 2 == 0;
  if (even) st.program.send(next, out, tag, mb, Stream::kTpSend, after);
  st.program.recv(prev, in, tag, mb, Stream::kTpRecv, after);
  if (!even) st.program.send(next, out, tag, mb, Stream::kTpSend, after);
}

void ring_attention_forward(StepState& st, Phase ph, LayerActs& a) {
  const StepDims& d = st.dims;
  const int sp = d.sp, i = st.coord.sp, l = a.layer, mb = a.mb;
  const int next = sp_peer(st, +1), prev = sp_peer(st, -1);
  BufferId held = pack_kv(st, ph, a);
  for (int j = 0; j < sp; ++j) {
    BufferId incoming = kNoId;
    if (j + 1 < sp) {
      incoming = st.allocate("kv_recv", l, mb, d.n_local * 2 * kv_cols(d), d.dtype, BufferRole::kComm);
      ring_exchange(st, next, held, prev, incoming, kKvTag, mb);
    }
    std::vector<BufferId> in = {a.qkv};
    if (j > 0) in.push_back(held);
    st.kernel(Kernel::kRingAttention, ph, l, mb, step_dims(d, mode_of(i, j, sp)), in, {a.ctx, a.lse},
              j > 0 ? kAccumulateOut : 0, d.dtype);
    st.release(held);
    held = incoming;
  }
}

BufferId ring_attention_backward(StepState& st, const LayerActs& a, BufferId dctx) {
  const StepDims& d = st.dims;
  const int sp = d.sp, i = st.coord.sp, l = a.layer, mb = a.mb;
  const int next = sp_peer(st, +1), prev = sp_peer(st, -1);
  const int64_t kv_elements = d.n_local * 2 * kv_cols(d);
  BufferId dqkv = st.allocate("dqkv", l, mb, d.n_local * d.qkv_out, d.dtype);
  BufferId held = pack_kv(st, Phase::kBackward, a);
  BufferId sum = st.allocate("dkv_sum", l, mb, kv_elements, DType::kFp32, BufferRole::kComm);
  for (int j = 0; j < sp; ++j) {
    BufferId incoming = kNoId;
    if (j + 1 < sp) {
      incoming = st.allocate("kv_recv", l, mb, kv_elements, d.dtype, BufferRole::kComm);
      ring_exchange(st, next, held, prev, incoming, kKvTag, mb);
    }
    // The next block's sum so far (at the last step: this rank's own, complete). Its receive is
    // allocated before the kernel, as before, and posted with this step's send after it (the
    // receive touches only its own buffer, so it still runs on kTpRecv as early as that stream
    // allows); posting it before the send would close a cycle for a one-in-flight consumer.
    BufferId incoming_sum = st.allocate("dkv_recv", l, mb, kv_elements, DType::kFp32, BufferRole::kComm);
    std::vector<BufferId> in = {a.qkv, a.ctx, dctx, a.lse};
    if (j > 0) in.push_back(held);
    st.kernel(Kernel::kRingAttentionBwd, Phase::kBackward, l, mb, step_dims(d, mode_of(i, j, sp)), in, {dqkv, sum}, 0,
              d.dtype);
    ring_exchange(st, next, sum, prev, incoming_sum, kDkvTag, mb);
    st.release(held);
    st.release(sum);
    held = incoming;
    sum = incoming_sum;
  }
  st.kernel(Kernel::kKvUnpack, Phase::kBackward, l, mb, {d.n_local, d.heads * d.head_dim, kv_cols(d)}, {sum}, {dqkv},
            0, d.dtype);
  st.release(sum);
  return dqkv;
}

}  // namespace tandem
