// Embedding, head and loss under 2D (and 2.5D) tensor parallelism; the grid_* bodies serve 3D too
// with its GridEndOps (shared/tp3d.h). See shared/tp2d.h for the layout and how it
// differs from Colossal-AI's Embedding2D / Classifier2D. The table (embedding, or untied head)
// is held as vocabulary block i, feature block j: [vocab/q, h/q].
//  - embedding, vocabulary-parallel (vocabulary above 2048, VocabParallelEmbedding2D / 2p5D at
//    4f9953be, parallel_2d/layers.py and parallel_2p5d/layers.py): the tokens of the q batch
//    blocks of the column group (the depth layer's share of the micro-batch) looked up in the
//    rank's rows i*vocab/q.. of its block (zero outside), the [q n, h/q] partial embeddings
//    reduce-scattered over the column group (PARALLEL_2D_COL, by batch block); backward dx
//    all-gathered over the column group (_ReduceScatterTensor2D.backward) and the rows' gradient
//    accumulated into the rank's block (no table collective).
//  - embedding, vocabulary up to 2048: all-gather the table over the column group into its feature block j [vocab, h/q],
//    look up the batch block's tokens locally (no reduction: each rank writes its own features);
//    backward: the table gradient [vocab, h/q] of the batch block, reduce-scattered over the
//    column group (the other batch blocks) into the rank's [vocab/q, h/q] block.
//  - head, vocabulary-parallel (GridEndOps::vocab_parallel, vocabulary above 2048 as Colossal-AI
//    chooses): the final layer norm; logits [n, vocab/q] of vocabulary block j by SUMMA
//    (summa_head_forward, Colossal-AI's VocabParallelClassifier2D); the cross-entropy's three
//    all-reduces over the row group (VocabParallelCrossEntropy2D / 2p5D); the loss summed as below.
//    Backward: dlogits [n, vocab/q], dyf and the table block's gradient by SUMMA.
//  - head, gathered (vocabulary up to 2048): the final layer norm (statistics over the row group); partial logits
//    [n, vocab] = yf[i, j] table[:, j]^T, all-reduced over the row group; the cross-entropy on
//    every rank of the row (no vocabulary split: the row holds the same logits); the micro-batch's
//    loss all-reduced over the column group (and, under 2.5D, the depth group), so that every rank
//    holds the sum over batch blocks.
//    Backward: dyf = dlogits table[:, j] locally, the table gradient as for the embedding.
#include "shared/tp2d.h"

namespace tandem {
namespace {

// The rank's feature block of the whole table, [vocab, h/q], gathered over the column group.
BufferId gather_table(StepState& st, BufferId shard, int mb, Phase ph) {
  const StepDims& d = st.dims;
  const int64_t elements = d.vocab * d.hidden;
  const BufferId table = st.allocate("table_block", -1, mb, elements, d.dtype, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kAllGather, tp2d_column_group(st), -1, shard, table,
                  elements * dtype_bytes(d.dtype), ph, -1, mb, d.dtype);
  return table;
}

// Adds a table gradient of the batch block [vocab, h/q] (freed) into the rank's block `grad`.
void reduce_table_grad(StepState& st, BufferId full, BufferId grad, int mb) {
  const StepDims& d = st.dims;
  const DType gt = st.program.buffer_at(full).dtype;
  const int64_t shard_elements = d.vocab / d.tp2d_q * d.hidden;
  const BufferId shard = st.allocate("table_grad_block", -1, mb, shard_elements, gt, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kReduceScatter, tp2d_column_group(st), -1, full, shard,
                  d.vocab * d.hidden * dtype_bytes(gt), Phase::kBackward, -1, mb, gt);
  st.release(full);
  st.kernel(Kernel::kAccumulate, Phase::kBackward, -1, mb, {shard_elements}, {shard}, {grad}, 0, gt);
  st.release(shard);
}

// The micro-batch's loss summed over the other batch blocks: the column group, and under 2.5D the
// depth group (on the gradient stream).
void reduce_loss(StepState& st, BufferId loss, int mb) {
  tp2d_collective(st, CollectiveOp::kAllReduce, tp2d_column_group(st), -1, loss, loss, 4, Phase::kForward, -1, mb,
                  DType::kFp32);
  if (st.dims.tp2d_d > 1)  // 2.5D: the other depth layers' batch blocks
    tp2d_collective(st, CollectiveOp::kAllReduce, Tp2dGroups(st.scenario, st.grid).depth(st.coord), -1, loss, loss, 4,
                    Phase::kForward, -1, mb, DType::kFp32, Stream::kGradComm);
}

void head_logits(StepState& st, int mb, BufferId yf, BufferId table, BufferId logits) {
  const StepDims& d = st.dims;
  summa_head_forward(st, mb, yf, table, logits, d.n, d.vocab / d.tp2d_q, d.hidden);
}

BufferId head_backward(StepState& st, int mb, BufferId dlogits, BufferId yf, BufferId table, BufferId dtable) {
  const StepDims& d = st.dims;
  return summa_head_backward(st, mb, dlogits, yf, table, dtable, d.n, d.vocab / d.tp2d_q, d.hidden);
}

}  // namespace

GridEndOps tp2d_end_ops(const StepState& st) {
  const StepDims& d = st.dims;
  GridEndOps e;
  e.norm_group = tp2d_row_group(st);
  e.norm_parts = d.tp2d_q;
  e.gather_table = gather_table;
  e.reduce_table_grad = reduce_table_grad;
  e.reduce_loss = reduce_loss;
  // VocabParallelClassifier2D: the logits of batch block i, vocabulary block j; the loss's
  // all-reduces over PARALLEL_2D_ROW (loss_2d.py, the row group), its mean over PARALLEL_2D_COL
  // (reduce_by_batch_2d: the column group; 2.5D's depth group too, as reduce_loss).
  e.vocab_parallel = grid_vocab_parallel(st);
  e.vocab_group = e.norm_group;
  e.rows = d.n;
  e.vocab_part = d.vocab / d.tp2d_q;
  e.vocab_offset = e.vocab_part * d.tp2d_j;
  e.head_logits = head_logits;
  e.head_backward = head_backward;
  e.reduce_head_loss = reduce_loss;
  // VocabParallelEmbedding2D: vocabulary rows of block i (the column group's rank), the tokens of
  // the column group's batch blocks k*q .. k*q + q-1, the output reduce-scattered over the column
  // group (whose ranks are rows 0..q-1, in order); the table block itself is looked up.
  e.embed_first_block = int64_t(d.tp2d_k) * d.tp2d_q;
  e.embed_blocks = d.tp2d_q;
  e.embed_rows = d.vocab / d.tp2d_q;
  e.embed_offset = e.embed_rows * d.tp2d_i;
  e.embed_group = tp2d_column_group(st);
  return e;
}

namespace {

// The vocabulary-parallel embedding (GridEndOps::embed_*): partial lookups of every token of the
// group's batch blocks in the rank's vocabulary rows, reduce-scattered by batch block.
BufferId vocab_parallel_embedding_forward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb) {
  const StepDims& d = st.dims;
  auto [tokens, targets] = load_batch(st, mb, e.embed_first_block, e.embed_blocks);
  st.release(targets);  // not this rank's rows: the head loads its own batch block's targets
  st.keep_tokens(chunk, mb, tokens);
  const BufferId block = st.params(unit).table;
  const BufferId table = e.embed_table ? e.embed_table(st, block, mb, Phase::kForward) : block;
  const int64_t wide = e.embed_blocks * d.n;
  const BufferId part = st.allocate("x_embed_partial", -1, mb, wide * d.hidden, d.dtype, BufferRole::kComm);
  st.kernel(Kernel::kEmbedding, Phase::kForward, -1, mb, {wide, d.hidden, e.embed_rows, e.embed_offset},
            {tokens, table}, {part}, 0, d.dtype);
  if (table != block) st.release(table);
  const BufferId x = st.allocate("x_embed", -1, mb, d.n * d.hidden, d.dtype);
  tp2d_collective(st, CollectiveOp::kReduceScatter, e.embed_group, -1, part, x, wide * d.hidden * dtype_bytes(d.dtype),
                  Phase::kForward, -1, mb, d.dtype);
  st.release(part);
  return x;
}

void vocab_parallel_embedding_backward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb, BufferId dx) {
  const StepDims& d = st.dims;
  const BufferId tokens = st.take_tokens(chunk, mb);
  const int64_t wide = e.embed_blocks * d.n;
  const BufferId dfull = st.allocate("dx_embed_full", -1, mb, wide * d.hidden, d.dtype, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kAllGather, e.embed_group, -1, dx, dfull, wide * d.hidden * dtype_bytes(d.dtype),
                  Phase::kBackward, -1, mb, d.dtype);
  st.release(dx);
  const BufferId grad = st.grads(unit).table;
  const std::array<int64_t, 6> dims = {wide, d.hidden, e.embed_rows, e.embed_offset};
  if (!e.embed_table_grad) {
    st.kernel(Kernel::kEmbeddingBwd, Phase::kBackward, -1, mb, dims, {tokens, dfull}, {grad}, kAccumulateOut, d.dtype);
  } else {
    const BufferId rows = st.allocate("table_grad", -1, mb, e.embed_rows * d.hidden, st.program.buffer_at(grad).dtype,
                                      BufferRole::kComm);
    st.kernel(Kernel::kEmbeddingBwd, Phase::kBackward, -1, mb, dims, {tokens, dfull}, {rows}, kAccumulateOut, d.dtype);
    e.embed_table_grad(st, rows, grad, mb);  // frees rows
  }
  st.release(dfull);
  st.release(tokens);
}

}  // namespace

BufferId grid_embedding_forward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb) {
  if (e.vocab_parallel) return vocab_parallel_embedding_forward(st, e, unit, chunk, mb);
  const StepDims& d = st.dims;
  auto [tokens, targets] = load_batch(st, mb);
  if (st.holds_head()) st.keep_targets(mb, targets);
  else st.release(targets);
  st.keep_tokens(chunk, mb, tokens);
  const BufferId table = e.gather_table(st, st.params(unit).table, mb, Phase::kForward);
  const BufferId x = st.allocate("x_embed", -1, mb, d.n * d.hidden, d.dtype);
  st.kernel(Kernel::kEmbedding, Phase::kForward, -1, mb, {d.n, d.hidden, d.vocab, 0}, {tokens, table}, {x}, 0,
            d.dtype);
  st.release(table);
  return x;
}

void grid_embedding_backward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb, BufferId dx) {
  if (e.vocab_parallel) return vocab_parallel_embedding_backward(st, e, unit, chunk, mb, dx);
  const StepDims& d = st.dims;
  const BufferId tokens = st.take_tokens(chunk, mb);
  const BufferId grad = st.grads(unit).table;
  const BufferId full = st.allocate("table_grad", -1, mb, d.vocab * d.hidden, st.program.buffer_at(grad).dtype,
                                    BufferRole::kComm);
  st.kernel(Kernel::kEmbeddingBwd, Phase::kBackward, -1, mb, {d.n, d.hidden, d.vocab, 0}, {tokens, dx}, {full},
            kAccumulateOut, d.dtype);
  st.release(dx);
  st.release(tokens);
  e.reduce_table_grad(st, full, grad, mb);
}

namespace {

// The cross-entropy kernels' dims of the vocabulary-parallel head (shared/schedule.h; dims[4]: the
// passes on an fp32 copy of the logits, software.cross_entropy_fp32).
std::array<int64_t, 6> vocab_parallel_dims(const StepState& st, const GridEndOps& e) {
  return {e.rows, e.vocab_part, e.vocab_offset, tokens_per_iteration(st),
          st.scenario.software.cross_entropy_fp32 ? 1 : 0};
}

// The head and loss with the vocabulary split (GridEndOps::vocab_parallel): the final norm, the
// rank's logits block from the classifier, the loss's three all-reduces over the vocabulary
// group, the micro-batch's loss summed over the batch blocks.
void vocab_parallel_head_forward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb, BufferId x) {
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  HeadActs h = head_acts(st, mb, x);
  if (e.logits_block >= 0) {  // the logits' rows are another batch block than the embedding's
    st.release(h.targets);
    auto [tokens, targets] = load_batch(st, mb, e.logits_block);
    st.release(tokens);
    h.targets = targets;
  }
  split_norm_forward(st, e.norm_ops(), Phase::kForward, -1, mb, x, w.ln1_w, w.ln1_b, &h.yf, &h.mean, &h.rstd, "yf",
                     "meanf", "rstdf");
  h.logits = st.allocate("logits", -1, mb, e.rows * e.vocab_part, d.dtype);
  e.head_logits(st, mb, h.yf, w.table, h.logits);
  const std::array<int64_t, 6> xd = vocab_parallel_dims(st, e);
  if (xd[4])
    h.logits_fp32 = st.allocate("logits_fp32", -1, mb, e.rows * e.vocab_part, DType::kFp32, BufferRole::kWorkspace);
  const BufferId loss = cross_entropy_fwd(st, mb, xd, h, e.vocab_group);
  e.reduce_head_loss(st, loss, mb);
  st.kernel(Kernel::kAccumulate, Phase::kForward, -1, mb, {1}, {loss}, {st.loss()}, 0, DType::kFp32);
  st.release(loss);
  st.keep_head(chunk, mb, h);
}

BufferId vocab_parallel_head_backward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb) {
  const UnitViews& w = st.params(unit);
  const UnitViews& g = st.grads(unit);
  HeadActs h = st.take_head(chunk, mb);
  const BufferId dlogits = cross_entropy_bwd(st, mb, vocab_parallel_dims(st, e), h);  // releases logits_fp32 too
  const BufferId dyf = e.head_backward(st, mb, dlogits, h.yf, w.table, g.table);
  st.release(dlogits);
  const BufferId dx = split_norm_backward(st, e.norm_ops(), -1, mb, dyf, h.x, w.ln1_w, h.mean, h.rstd, g.ln1_w,
                                          g.ln1_b);
  for (BufferId id : {dyf, h.x, h.yf, h.mean, h.rstd}) st.release(id);
  return dx;
}

}  // namespace

void grid_head_forward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb, BufferId x) {
  if (e.vocab_parallel) return vocab_parallel_head_forward(st, e, unit, chunk, mb, x);
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  HeadActs h = head_acts(st, mb, x);
  split_norm_forward(st, e.norm_ops(), Phase::kForward, -1, mb, x, w.ln1_w, w.ln1_b, &h.yf, &h.mean, &h.rstd, "yf",
                     "meanf", "rstdf");
  const BufferId table = e.gather_table(st, w.table, mb, Phase::kForward);
  h.logits = st.allocate("logits", -1, mb, d.n * d.vocab, d.dtype);
  st.linear_fwd(Phase::kForward, -1, mb, h.yf, table, h.logits, d.n, d.vocab, d.hidden);
  st.release(table);
  tp2d_collective(st, CollectiveOp::kAllReduce, e.norm_group, -1, h.logits, h.logits,
                  d.n * d.vocab * dtype_bytes(d.dtype), Phase::kForward, -1, mb, d.dtype);
  // dims[4]: the passes run on an fp32 copy of the logits (software.cross_entropy_fp32), as in
  // shared/embedding_head_emitter.cc, whose memory is a buffer from the loss to its backward.
  const int fp32_loss = st.scenario.software.cross_entropy_fp32 ? 1 : 0;
  const std::array<int64_t, 6> xd = {d.n, d.vocab, 0, tokens_per_iteration(st), fp32_loss};
  if (fp32_loss) h.logits_fp32 = st.allocate("logits_fp32", -1, mb, d.n * d.vocab, DType::kFp32, BufferRole::kWorkspace);
  // The row holds whole logits (all-reduced above): the loss is not vocabulary-parallel.
  const BufferId loss = cross_entropy_fwd(st, mb, xd, h, false);
  e.reduce_loss(st, loss, mb);
  st.kernel(Kernel::kAccumulate, Phase::kForward, -1, mb, {1}, {loss}, {st.loss()}, 0, DType::kFp32);
  st.release(loss);
  st.keep_head(chunk, mb, h);
}

BufferId grid_head_backward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb) {
  if (e.vocab_parallel) return vocab_parallel_head_backward(st, e, unit, chunk, mb);
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  const UnitViews& g = st.grads(unit);
  HeadActs h = st.take_head(chunk, mb);
  const std::array<int64_t, 6> xd = {d.n, d.vocab, 0, tokens_per_iteration(st),
                                     st.scenario.software.cross_entropy_fp32 ? 1 : 0};
  const BufferId dlogits = cross_entropy_bwd(st, mb, xd, h);  // releases logits_fp32 too
  const BufferId table = e.gather_table(st, w.table, mb, Phase::kBackward);
  const BufferId dyf = st.allocate("dyf", -1, mb, d.n * d.hidden, d.dtype);
  st.linear_dgrad(-1, mb, dlogits, table, dyf, d.n, d.vocab, d.hidden);
  st.release(table);
  const BufferId full = st.allocate("table_grad", -1, mb, d.vocab * d.hidden, st.program.buffer_at(g.table).dtype,
                                    BufferRole::kComm);
  st.kernel(Kernel::kGemm, Phase::kBackward, -1, mb, {d.vocab, d.hidden, d.n}, {dlogits, h.yf}, {full}, kTransA,
            d.gemm_dtype(-1, true));
  st.release(dlogits);
  e.reduce_table_grad(st, full, g.table, mb);
  const BufferId dx = split_norm_backward(st, e.norm_ops(), -1, mb, dyf, h.x, w.ln1_w, h.mean, h.rstd, g.ln1_w,
                                          g.ln1_b);
  for (BufferId id : {dyf, h.x, h.yf, h.mean, h.rstd}) st.release(id);
  return dx;
}

void tp2d_reduce_replicated_grads(StepState& st, int k) {
  // 2.5D: every weight is held alike in the d depth layers, which saw other batch blocks
  // (Tesseract's all-reduce of the weight gradients over the depth group), on the gradient stream.
  if (st.dims.tp2d_d > 1) {
    const BufferId grad = st.bucket(k).grad;
    const Buffer& b = st.program.buffer_at(grad);
    tp2d_collective(st, CollectiveOp::kAllReduce, Tp2dGroups(st.scenario, st.grid).depth(st.coord), -1, grad, grad,
                    b.bytes, Phase::kBackward, -1, -1, b.dtype, Stream::kGradComm);
  }
  for (int u : st.layout.buckets[k].units) {
    const BufferId norm = st.grads(u).norm;
    if (norm == kNoId) continue;
    const Buffer& b = st.program.buffer_at(norm);
    tp2d_collective(st, CollectiveOp::kAllReduce, tp2d_column_group(st), -1, norm, norm, b.bytes, Phase::kBackward,
                    st.layout.units[u].layer, -1, b.dtype);
  }
}

}  // namespace tandem
