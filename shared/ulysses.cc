#include "shared/ulysses.h"

#include <string>

namespace tandem {
namespace {

// One exchange: pack x into blocks, all-to-all over the sequence group, unpack into a new buffer
// named `name`. q_cols, kv_cols: the sequence-split side's column segments.
BufferId exchange(StepState& st, Phase ph, int l, int mb, BufferId x, int64_t q_cols, int64_t kv_cols, bool to_heads,
                  const char* name) {
  const StepDims& d = st.dims;
  const int64_t elements = d.n_local * (q_cols + 2 * kv_cols);
  const std::array<int64_t, 6> dims = {d.batch, d.seq, d.sp, q_cols, kv_cols};
  const uint8_t flags = to_heads ? kToHeads : 0;
  const std::string base(name);
  BufferId send = st.allocate((base + ".a2a_send").c_str(), l, mb, elements, d.dtype, BufferRole::kComm);
  st.kernel(Kernel::kAllToAllPack, ph, l, mb, dims, {x}, {send}, flags, d.dtype);
  BufferId recv = st.allocate((base + ".a2a_recv").c_str(), l, mb, elements, d.dtype, BufferRole::kComm);
  Collective c;
  c.op = CollectiveOp::kAllToAll;
  c.group = st.sp_group();
  c.bytes = elements * dtype_bytes(d.dtype);
  c.dtype = d.dtype;
  c.phase = ph;
  c.layer = l;
  c.microbatch = mb;
  c.buffers = {send, recv};
  st.program.collective(std::move(c), Stream::kComm);
  st.release(send);
  BufferId y = st.allocate(name, l, mb, elements, d.dtype);
  st.kernel(Kernel::kAllToAllUnpack, ph, l, mb, dims, {recv}, {y}, flags, d.dtype);
  st.release(recv);
  return y;
}

int64_t q_cols(const StepDims& d) { return d.heads * d.head_dim; }
int64_t kv_cols(const StepDims& d) { return d.kv_heads * d.head_dim; }

}  // namespace

void ulysses_qkv_to_heads(StepState& st, Phase ph, LayerActs& a) {
  BufferId heads = exchange(st, ph, a.layer, a.mb, a.qkv, q_cols(st.dims), kv_cols(st.dims), true, "qkv_heads");
  st.release(a.qkv);
  a.qkv = heads;
}

void ulysses_ctx_to_seq(StepState& st, Phase ph, LayerActs& a) {
  a.ctx_seq = exchange(st, ph, a.layer, a.mb, a.ctx, q_cols(st.dims), 0, false, "ctx_seq");
}

BufferId ulysses_dctx_to_heads(StepState& st, const LayerActs& a, BufferId dctx) {
  BufferId heads = exchange(st, Phase::kBackward, a.layer, a.mb, dctx, q_cols(st.dims), 0, true, "dctx_heads");
  st.release(dctx);
  return heads;
}

BufferId ulysses_dqkv_to_seq(StepState& st, const LayerActs& a, BufferId dqkv) {
  BufferId seq = exchange(st, Phase::kBackward, a.layer, a.mb, dqkv, q_cols(st.dims), kv_cols(st.dims), false, "dqkv_seq");
  st.release(dqkv);
  return seq;
}

}  // namespace tandem
