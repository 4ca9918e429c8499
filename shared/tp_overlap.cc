// Megatron-SP's all-gathers and reduce-scatters as ring exchanges under the GEMMs
// (software.tp_comm_overlap), the way Transformer Engine's userbuffers run them for Megatron-Core
// --tp-comm-overlap. The sequence-sharded activations are t row blocks of the full [n, h] (block
// k is tensor rank k's shard); the tensor ranks form a ring, rank i sending to i+1 on kTpSend and
// receiving from i-1 on kTpRecv, one block per step, while the compute stream multiplies the
// block it already has. Both sides of every exchange are in the program, so the simulator prices
// the p2p flows and the real backends move the data.
#include <algorithm>

#include "shared/step_state.h"

namespace tandem {
namespace {

constexpr int kTpExchangeTag = 2;  // pipeline messages use 0 (activations) and 1 (gradients)

// Transformer Engine issues the chunk GEMMs of its userbuffers overlap round-robin on
// min(_NUM_MAX_UB_STREAMS, tp) compute streams (NVIDIA/TransformerEngine v1.8,
// 3ec998e96c82bc30247560ced6170c4221ca2b5a: transformer_engine/pytorch/module/base.py:46
// `_NUM_MAX_UB_STREAMS = 3`; csrc/comm_gemm_overlap.h:665 creates the streams, :955 (ring-exchange
// all-gather) and :1122 (ring-exchange reduce-scatter) pick `_stream_compute[i % size]`; a chunk
// waits only for its own block's arrival, :967-970), so consecutive chunks run at the same time and
// share the SMs. The same constant at v1.7, v1.9 and v1.10. Megatron-Core r0.8's --tp-comm-overlap
// initialises these communicators (megatron/training/initialize.py:209 at baf94af3c667).
constexpr int kUserbufferComputeStreams = 3;

// Marks the chunk GEMMs written while it lives with the streams they run on.
class ChunkStreams {
 public:
  explicit ChunkStreams(StepState& st) : st_(st) { st_.gemm_streams = std::min(kUserbufferComputeStreams, st.dims.tp); }
  ~ChunkStreams() { st_.gemm_streams = 1; }
  ChunkStreams(const ChunkStreams&) = delete;
  ChunkStreams& operator=(const ChunkStreams&) = delete;

 private:
  StepState& st_;
};

// Row block k of `of`, whose rows are `cols` elements of the activation dtype.
BufferId block(StepState& st, BufferId of, int k, int64_t cols, const char* what, int layer, int mb) {
  const int64_t bytes = st.dims.n_local * cols * dtype_bytes(st.dims.dtype);
  const std::string name = st.buffer_name(what, layer, mb) + ".b" + std::to_string(k);
  return st.program.view(of, k * bytes, bytes, st.dims.dtype, name);
}

}  // namespace

// Step 0 multiplies this rank's own shard while sending it on; step s receives the block of tensor
// rank i-s, forwards it (but at the last step) and multiplies it. A GEMM block waits only for its
// own block's arrival. The gathered buffer is returned whole (the weight gradient reads it).
BufferId gather_gemm_overlapped(StepState& st, BufferId shard, int layer, int mb, const char* what,
                                BufferId out, int64_t out_cols, const BlockGemm& gemm) {
  const StepDims& d = st.dims;
  const int t = d.tp, i = st.coord.tp;
  const int next = st.tensor_peer(+1), prev = st.tensor_peer(-1);
  BufferId full = st.allocate(what, layer, mb, d.n * d.hidden, d.dtype, BufferRole::kComm);
  BufferId own = block(st, full, i, d.hidden, what, layer, mb);
  const ChunkStreams streams(st);
  st.program.copy(CopyDirection::kD2D, shard, own, Stream::kCompute);
  st.program.send(next, shard, kTpExchangeTag, mb, Stream::kTpSend);
  gemm(shard, block(st, out, i, out_cols, "out", layer, mb), d.n_local);
  for (int s = 1; s < t; ++s) {
    const int k = (i - s + t) % t;
    BufferId in = block(st, full, k, d.hidden, what, layer, mb);
    st.program.recv(prev, in, kTpExchangeTag, mb, Stream::kTpRecv);
    if (s + 1 < t) st.program.send(next, in, kTpExchangeTag, mb, Stream::kTpSend);
    gemm(in, block(st, out, k, out_cols, "out", layer, mb), d.n_local);
  }
  return full;
}

// The block of tensor rank j = i-s-1 starts at rank j+1 and travels the ring to j: step s
// multiplies this rank's part of block j, adds the running sum received from i-1 and sends it to
// i+1; at the last step the block is this rank's own and the sum is complete. A part is freed one
// step after its send, so that the send runs under the next GEMM.
BufferId gemm_reduce_scatter_overlapped(StepState& st, BufferId in, int64_t in_cols, int layer, int mb, Phase ph,
                                        const char* what, const BlockGemm& gemm) {
  const StepDims& d = st.dims;
  const int t = d.tp, i = st.coord.tp;
  const int next = st.tensor_peer(+1), prev = st.tensor_peer(-1);
  const int64_t elems = d.n_local * d.hidden;
  BufferId sent = kNoId, part = kNoId;
  const ChunkStreams streams(st);
  for (int s = 0; s < t; ++s) {
    const int j = (i - s - 1 + t) % t;
    BufferId partial_sum = kNoId;
    if (s > 0) {
      partial_sum = st.allocate("rs_recv", layer, mb, elems, d.dtype, BufferRole::kComm);
      st.program.recv(prev, partial_sum, kTpExchangeTag, mb, Stream::kTpRecv);
    }
    part = st.allocate(s + 1 < t ? "rs_part" : what, layer, mb, elems, d.dtype);
    gemm(block(st, in, j, in_cols, "in", layer, mb), part, d.n_local);
    if (sent != kNoId) st.release(sent, Stream::kTpSend);
    sent = kNoId;
    if (partial_sum != kNoId) {
      st.kernel(Kernel::kAccumulate, ph, layer, mb, {elems}, {partial_sum}, {part}, 0, d.dtype);
      st.release(partial_sum);
    }
    if (s + 1 < t) {
      st.program.send(next, part, kTpExchangeTag, mb, Stream::kTpSend);
      sent = part;
    }
  }
  return part;
}

}  // namespace tandem
