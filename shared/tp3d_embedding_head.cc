// Embedding, head and loss under 3D tensor parallelism (shared/tp3d.h for the layout and how it
// differs from Colossal-AI's Embedding3D / Classifier3D). The table (embedding, or untied head)
// is held as vocabulary block a*q + b (of q^2), feature block c: [vocab/q^2, h/q].
//  - embedding, vocabulary above 2048 (VocabParallelEmbedding3D, parallel_3d/layers.py at
//    4f9953be): the tokens of batch blocks b*q .. b*q + q-1 (the input split over the weight
//    group, B) looked up in vocabulary part a [a*vocab/q, (a+1)*vocab/q) of the table gathered
//    over B ([vocab/q, h/q], zero outside the part), the [q n, h/q] partial embeddings
//    reduce-scattered over A (the input group) by batch block into b*q + a. Backward: dx
//    all-gathered over A, the part's gradient [vocab/q, h/q] reduce-scattered over B into the
//    rank's block (the backward of all_gather_tensor_3d).
//  - embedding, vocabulary up to 2048: all-gather the table over B, then A, into its feature block c [vocab, h/q]; look
//    the batch block's tokens up locally. Backward: the table gradient [vocab, h/q] of the batch
//    block, reduce-scattered over A, then B (the other batch blocks) into the rank's block.
//  - head, vocabulary above 2048 (GridEndOps::vocab_parallel): the classifier as a 3D linear
//    whose weight is the table (VocabParallelClassifier3D), logits [n, vocab/q] of batch block
//    b*q + c, vocabulary block a; the loss's three all-reduces over A, the loss over C then B.
//  - head, vocabulary up to 2048: the final layer norm (statistics over C); partial logits [n, vocab] = yf table_c^T,
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

// VocabParallelEmbedding3D's weight: the rank's block gathered over B into vocabulary part a,
// [vocab/q, h/q].
BufferId gather_table_part(StepState& st, BufferId shard, int mb, Phase ph) {
  const StepDims& d = st.dims;
  const int64_t part = d.vocab / d.tp3d_q * d.hidden;
  const BufferId table = st.allocate("table_part", -1, mb, part, d.dtype, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kAllGather, tp3d_group(st, kTp3dAxisB), -1, shard, table,
                  part * dtype_bytes(d.dtype), ph, -1, mb, d.dtype);
  return table;
}

// Adds the vocabulary part's gradient [vocab/q, h/q] (freed), reduce-scattered over B, into the
// rank's block `grad`.
void reduce_table_part_grad(StepState& st, BufferId part, BufferId grad, int mb) {
  const StepDims& d = st.dims;
  const DType gt = st.program.buffer_at(part).dtype;
  const int64_t all = d.vocab / d.tp3d_q * d.hidden, mine = all / d.tp3d_q;
  const BufferId shard = st.allocate("table_grad_block", -1, mb, mine, gt, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kReduceScatter, tp3d_group(st, kTp3dAxisB), -1, part, shard,
                  all * dtype_bytes(gt), Phase::kBackward, -1, mb, gt);
  st.release(part);
  st.kernel(Kernel::kAccumulate, Phase::kBackward, -1, mb, {mine}, {shard}, {grad}, 0, gt);
  st.release(shard);
}

// The micro-batch's loss summed over the other q^2 - 1 batch blocks: over A, then B.
void reduce_loss(StepState& st, BufferId loss, int mb) {
  for (int axis : {kTp3dAxisA, kTp3dAxisB})
    tp2d_collective(st, CollectiveOp::kAllReduce, tp3d_group(st, axis), -1, loss, loss, 4, Phase::kForward, -1, mb,
                    DType::kFp32);
}

// The vocabulary-parallel head's loss, on the rows of batch block b*q + c: summed over C, then B.
void reduce_head_loss(StepState& st, BufferId loss, int mb) {
  for (int axis : {kTp3dAxisC, kTp3dAxisB})
    tp2d_collective(st, CollectiveOp::kAllReduce, tp3d_group(st, axis), -1, loss, loss, 4, Phase::kForward, -1, mb,
                    DType::kFp32);
}

// The classifier as a 3D linear whose weight is the table (rows block a*q + b of q^2, feature
// block c: the layout of qkv's weight, shared/tp3d_linear.cc), input axis A, output axis C.
constexpr int kHeadLinear = 4;

void head_logits(StepState& st, int mb, BufferId yf, BufferId table, BufferId logits) {
  const StepDims& d = st.dims;
  tp3d_layer_ops(st).linear_fwd(st, Phase::kForward, -1, mb, kHeadLinear, yf, table, logits, d.n, d.vocab / d.tp3d_q,
                                d.hidden);
}

BufferId head_backward(StepState& st, int mb, BufferId dlogits, BufferId yf, BufferId table, BufferId dtable) {
  const StepDims& d = st.dims;
  return tp3d_layer_ops(st).linear_bwd(st, -1, mb, kHeadLinear, dlogits, yf, table, dtable, d.n, d.vocab / d.tp3d_q,
                                       d.hidden, "dyf");
}

}  // namespace

GridEndOps tp3d_end_ops(const StepState& st) {
  const StepDims& d = st.dims;
  GridEndOps e;
  e.norm_group = tp3d_group(st, kTp3dAxisC);
  e.norm_parts = d.tp3d_q;
  e.gather_table = gather_table;
  e.reduce_table_grad = reduce_table_grad;
  e.reduce_loss = reduce_loss;
  // VocabParallelClassifier3D (_VocabParallelClassifier3D: gather the input over the input group,
  // the weight over the weight group, GEMM, reduce-scatter the output over the output group): the
  // logits of batch block b*q + c, vocabulary block a (the table's rows a*q + 0..q-1 gathered
  // over B). VocabParallelCrossEntropy3D's all-reduces run over the group holding the other
  // vocabulary blocks of those rows, A (the classifier's input group: the loss is built after the
  // classifier's swap_in_out_group()); its mean over the other two (reduce_by_batch_3d): C, B.
  e.vocab_parallel = grid_vocab_parallel(st);
  e.vocab_group = tp3d_group(st, kTp3dAxisA);
  e.rows = d.n;
  e.vocab_part = d.vocab / d.tp3d_q;
  e.vocab_offset = e.vocab_part * d.tp3d_a;
  e.logits_block = int64_t(d.tp3d_b) * d.tp3d_q + d.tp3d_c;
  e.head_logits = head_logits;
  e.head_backward = head_backward;
  e.reduce_head_loss = reduce_head_loss;
  // VocabParallelEmbedding3D: split_tensor_3d of the input over the weight group (B: tokens of
  // batch blocks b*q ..), vocabulary part of the input group's rank (a), the weight gathered over
  // B, the output reduce-scattered over the input group (A, whose ranks are a = 0..q-1 in order).
  e.embed_first_block = int64_t(d.tp3d_b) * d.tp3d_q;
  e.embed_blocks = d.tp3d_q;
  e.embed_rows = d.vocab / d.tp3d_q;
  e.embed_offset = e.embed_rows * d.tp3d_a;
  e.embed_group = tp3d_group(st, kTp3dAxisA);
  e.embed_table = gather_table_part;
  e.embed_table_grad = reduce_table_part_grad;
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
