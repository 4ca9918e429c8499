// Embedding, head and loss under 3D tensor parallelism (shared/tp3d.h for the layout and how it
// differs from Colossal-AI's Embedding3D / Classifier3D). The table (embedding, or untied head)
// is held as vocabulary block a*q + b (of q^2), feature block c: [vocab/q^2, h/q].
//  - embedding: all-gather the table over B, then A, into its feature block c [vocab, h/q]; look
//    the batch block's tokens up locally. Backward: the table gradient [vocab, h/q] of the batch
//    block, reduce-scattered over A, then B (the other batch blocks) into the rank's block.
//  - head: the final layer norm (statistics over C); partial logits [n, vocab] = yf table_c^T,
//    all-reduced over C; the cross-entropy on every rank (no vocabulary split); the micro-batch's
//    loss all-reduced over A, then B, so that every rank holds the sum over the q^2 batch blocks.
//    Backward: dyf = dlogits table_c locally, the table gradient as for the embedding.
#include "shared/tp3d.h"

namespace tandem {
namespace {

BufferId gather_table(StepState& st, BufferId shard, int mb, Phase ph) {
  const StepDims& d = st.dims;
  const int e = dtype_bytes(d.dtype);
  const int64_t all = d.vocab * d.hidden, part = all / d.tp3d_q;
  const BufferId half = st.allocate("table_part", -1, mb, part, d.dtype, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kAllGather, tp3d_group(st, kTp3dAxisB), -1, shard, half, part * e, ph, -1, mb,
                  d.dtype);
  const BufferId table = st.allocate("table_block", -1, mb, all, d.dtype, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kAllGather, tp3d_group(st, kTp3dAxisA), -1, half, table, all * e, ph, -1, mb,
                  d.dtype);
  st.release(half);
  return table;
}

// Adds a table gradient of the batch block [vocab, h/q] (freed) into the rank's block `grad`.
void reduce_table_grad(StepState& st, BufferId full, BufferId grad, int mb) {
  const StepDims& d = st.dims;
  const DType gt = st.program.buffer_at(full).dtype;
  const int e = dtype_bytes(gt);
  const int64_t all = d.vocab * d.hidden, part = all / d.tp3d_q, mine = part / d.tp3d_q;
  const BufferId half = st.allocate("table_grad_part", -1, mb, part, gt, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kReduceScatter, tp3d_group(st, kTp3dAxisA), -1, full, half, all * e,
                  Phase::kBackward, -1, mb, gt);
  st.release(full);
  const BufferId shard = st.allocate("table_grad_block", -1, mb, mine, gt, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kReduceScatter, tp3d_group(st, kTp3dAxisB), -1, half, shard, part * e,
                  Phase::kBackward, -1, mb, gt);
  st.release(half);
  st.kernel(Kernel::kAccumulate, Phase::kBackward, -1, mb, {mine}, {shard}, {grad}, 0, gt);
  st.release(shard);
}

// The micro-batch's loss summed over the other q^2 - 1 batch blocks: over A, then B.
void reduce_loss(StepState& st, BufferId loss, int mb) {
  for (int axis : {kTp3dAxisA, kTp3dAxisB})
    tp2d_collective(st, CollectiveOp::kAllReduce, tp3d_group(st, axis), -1, loss, loss, 4, Phase::kForward, -1, mb,
                    DType::kFp32);
}

}  // namespace

GridEndOps tp3d_end_ops(const StepState& st) {
  GridEndOps e;
  e.norm_group = tp3d_group(st, kTp3dAxisC);
  e.norm_parts = st.dims.tp3d_q;
  e.gather_table = gather_table;
  e.reduce_table_grad = reduce_table_grad;
  e.reduce_loss = reduce_loss;
  return e;
}

void tp3d_reduce_replicated_grads(StepState& st, int k) {
  for (int u : st.layout.buckets[k].units) {
    const BufferId norm = st.grads(u).norm;
    if (norm == kNoId) continue;
    const Buffer& b = st.program.buffer_at(norm);
    for (int axis : {kTp3dAxisA, kTp3dAxisB})
      tp2d_collective(st, CollectiveOp::kAllReduce, tp3d_group(st, axis), -1, norm, norm, b.bytes, Phase::kBackward,
                      st.layout.units[u].layer, -1, b.dtype);
  }
}

}  // namespace tandem
