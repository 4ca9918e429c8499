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

}  // namespace

BufferId tp3d_embedding_forward(StepState& st, int unit, int chunk, int mb) {
  const StepDims& d = st.dims;
  auto [tokens, targets] = load_batch(st, mb);
  if (st.holds_head()) st.keep_targets(mb, targets);
  else st.release(targets);
  st.keep_tokens(chunk, mb, tokens);
  const BufferId table = gather_table(st, st.params(unit).table, mb, Phase::kForward);
  const BufferId x = st.allocate("x_embed", -1, mb, d.n * d.hidden, d.dtype);
  st.kernel(Kernel::kEmbedding, Phase::kForward, -1, mb, {d.n, d.hidden, d.vocab, 0}, {tokens, table}, {x}, 0,
            d.dtype);
  st.release(table);
  return x;
}

void tp3d_embedding_backward(StepState& st, int unit, int chunk, int mb, BufferId dx) {
  const StepDims& d = st.dims;
  const BufferId tokens = st.take_tokens(chunk, mb);
  const BufferId grad = st.grads(unit).table;
  const BufferId full = st.allocate("table_grad", -1, mb, d.vocab * d.hidden, st.program.buffer_at(grad).dtype,
                                    BufferRole::kComm);
  st.kernel(Kernel::kEmbeddingBwd, Phase::kBackward, -1, mb, {d.n, d.hidden, d.vocab, 0}, {tokens, dx}, {full},
            kAccumulateOut, d.dtype);
  st.release(dx);
  st.release(tokens);
  reduce_table_grad(st, full, grad, mb);
}

void tp3d_head_forward(StepState& st, int unit, int chunk, int mb, BufferId x) {
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  const GridLayerOps ops = tp3d_layer_ops(st);
  HeadActs h = head_acts(st, mb, x);
  split_norm_forward(st, ops, Phase::kForward, -1, mb, x, w.ln1_w, w.ln1_b, &h.yf, &h.mean, &h.rstd, "yf", "meanf",
                     "rstdf");
  const BufferId table = gather_table(st, w.table, mb, Phase::kForward);
  h.logits = st.allocate("logits", -1, mb, d.n * d.vocab, d.dtype);
  st.linear_fwd(Phase::kForward, -1, mb, h.yf, table, h.logits, d.n, d.vocab, d.hidden);
  st.release(table);
  tp2d_collective(st, CollectiveOp::kAllReduce, ops.norm_group, -1, h.logits, h.logits,
                  d.n * d.vocab * dtype_bytes(d.dtype), Phase::kForward, -1, mb, d.dtype);
  const std::array<int64_t, 6> xd = {d.n, d.vocab, 0, tokens_per_iteration(st)};
  const BufferId loss = cross_entropy_fwd(st, mb, xd, h, false);
  for (int axis : {kTp3dAxisA, kTp3dAxisB})
    tp2d_collective(st, CollectiveOp::kAllReduce, tp3d_group(st, axis), -1, loss, loss, 4, Phase::kForward, -1, mb,
                    DType::kFp32);
  st.kernel(Kernel::kAccumulate, Phase::kForward, -1, mb, {1}, {loss}, {st.loss()}, 0, DType::kFp32);
  st.release(loss);
  st.keep_head(chunk, mb, h);
}

BufferId tp3d_head_backward(StepState& st, int unit, int chunk, int mb) {
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  const UnitViews& g = st.grads(unit);
  HeadActs h = st.take_head(chunk, mb);
  const std::array<int64_t, 6> xd = {d.n, d.vocab, 0, tokens_per_iteration(st)};
  const BufferId dlogits = cross_entropy_bwd(st, mb, xd, h);
  const BufferId table = gather_table(st, w.table, mb, Phase::kBackward);
  const BufferId dyf = st.allocate("dyf", -1, mb, d.n * d.hidden, d.dtype);
  st.linear_dgrad(-1, mb, dlogits, table, dyf, d.n, d.vocab, d.hidden);
  st.release(table);
  const BufferId full = st.allocate("table_grad", -1, mb, d.vocab * d.hidden, st.program.buffer_at(g.table).dtype,
                                    BufferRole::kComm);
  st.kernel(Kernel::kGemm, Phase::kBackward, -1, mb, {d.vocab, d.hidden, d.n}, {dlogits, h.yf}, {full}, kTransA,
            d.gemm_dtype(-1, true));
  st.release(dlogits);
  reduce_table_grad(st, full, g.table, mb);
  const BufferId dx =
      split_norm_backward(st, tp3d_layer_ops(st), -1, mb, dyf, h.x, w.ln1_w, h.mean, h.rstd, g.ln1_w, g.ln1_b);
  for (BufferId id : {dyf, h.x, h.yf, h.mean, h.rstd}) st.release(id);
  return dx;
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
