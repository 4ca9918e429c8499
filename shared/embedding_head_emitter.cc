// The two ends of the model: data + vocabulary-parallel embedding on the first virtual stage, and
// final norm + output head + vocabulary-parallel cross-entropy on the last (Megatron-LM: the loss
// needs three all-reduces over the tensor group: row max, sum of exponentials, target logit).
#include "shared/step_state.h"
#include "shared/tp3d.h"

namespace tandem {

// Tokens and targets of one micro-batch (the samples a data-parallel rank takes, in order; under
// 2D tensor parallelism the rank's batch block i of them, under 2.5D block k*q + i, under 3D b*q + a).
std::pair<BufferId, BufferId> load_batch(StepState& st, int mb) {
  const StepDims& d = st.dims;
  int64_t block = int64_t(d.tp2d_k) * d.tp2d_q + d.tp2d_i;
  if (d.tp3d_q > 1) block = int64_t(d.tp3d_b) * d.tp3d_q + d.tp3d_a;
  return load_batch(st, mb, block);
}

std::pair<BufferId, BufferId> load_batch(StepState& st, int mb, int64_t block) { return load_batch(st, mb, block, 1); }

std::pair<BufferId, BufferId> load_batch(StepState& st, int mb, int64_t block, int64_t count) {
  const StepDims& d = st.dims;
  BufferId tokens = st.allocate("tokens", -1, mb, count * d.n, DType::kInt32);
  BufferId targets = st.allocate("targets", -1, mb, count * d.n, DType::kInt32);
  int64_t blocks = int64_t(d.tp2d_q) * d.tp2d_d;
  if (d.tp3d_q > 1) blocks = int64_t(d.tp3d_q) * d.tp3d_q;
  const int64_t sample0 = ((int64_t(st.coord.dp) * st.micro_batches + mb) * blocks + block) * d.batch;
  st.kernel(Kernel::kData, Phase::kForward, -1, mb, {sample0, count * d.batch, d.seq, d.seq_chunks, d.seq_chunk}, {},
            {tokens, targets}, d.zigzag ? kZigZag : 0, DType::kInt32);
  return {tokens, targets};
}

int64_t tokens_per_iteration(const StepState& st) {
  return int64_t(st.scenario.strategy.global_batch) * st.scenario.model.seq_len;
}

namespace {

// The cross-entropy kernels' dims (shared/schedule.h): dims[4] = 1 when the passes run on an fp32
// copy of the logits (software.cross_entropy_fp32), which Compute::bytes_moved costs.
std::array<int64_t, 6> xent_dims(const StepState& st) {
  const StepDims& d = st.dims;
  return {d.n, d.vocab, d.vocab_offset, tokens_per_iteration(st), st.scenario.software.cross_entropy_fp32 ? 1 : 0};
}

}  // namespace

HeadActs head_acts(StepState& st, int mb, BufferId x) {
  HeadActs h;
  h.x = x;
  h.targets = st.take_targets(mb);
  if (h.targets == kNoId) {
    auto [tokens, targets] = load_batch(st, mb);
    st.release(tokens);
    h.targets = targets;
  }
  return h;
}

namespace {

// The passes of the loss; reduce(buffer, op) all-reduces a per-row statistic where the vocabulary
// is split. Writes the loss into `loss`, or into a new buffer (returned) when it is kNoId.
template <class Reduce>
BufferId cross_entropy_passes(StepState& st, int mb, const std::array<int64_t, 6>& xd, HeadActs& h, BufferId loss,
                          Reduce reduce) {
  const StepDims& d = st.dims;
  const int64_t rows = xd[0];
  h.max = st.allocate("xent_max", -1, mb, rows, DType::kFp32);
  st.kernel(Kernel::kCrossEntropyMax, Phase::kForward, -1, mb, xd, {h.logits}, {h.max}, 0, d.dtype);
  reduce(h.max, ReduceOp::kMax);
  h.sum = st.allocate("xent_sum", -1, mb, rows, DType::kFp32);
  st.kernel(Kernel::kCrossEntropySumExp, Phase::kForward, -1, mb, xd, {h.logits, h.max}, {h.sum}, 0, d.dtype);
  reduce(h.sum, ReduceOp::kSum);
  const BufferId target = st.allocate("xent_target", -1, mb, rows, DType::kFp32);
  st.kernel(Kernel::kCrossEntropyTarget, Phase::kForward, -1, mb, xd, {h.logits, h.targets}, {target}, 0, d.dtype);
  reduce(target, ReduceOp::kSum);
  if (loss == kNoId) loss = st.allocate("xent_loss", -1, mb, 1, DType::kFp32, BufferRole::kComm);
  st.kernel(Kernel::kCrossEntropyLoss, Phase::kForward, -1, mb, xd, {h.max, h.sum, target}, {loss}, 0, DType::kFp32);
  st.release(target);
  return loss;
}

}  // namespace

BufferId cross_entropy_fwd(StepState& st, int mb, const std::array<int64_t, 6>& xd, HeadActs& h, GroupId group) {
  const int64_t row_bytes = xd[0] * 4;
  return cross_entropy_passes(st, mb, xd, h, kNoId, [&](BufferId b, ReduceOp op) {
    tp2d_collective(st, CollectiveOp::kAllReduce, group, -1, b, b, row_bytes, Phase::kForward, -1, mb, DType::kFp32,
                    Stream::kComm, op);
  });
}

BufferId cross_entropy_fwd(StepState& st, int mb, const std::array<int64_t, 6>& xd, HeadActs& h, bool vocab_parallel) {
  const StepDims& d = st.dims;
  const int64_t row_bytes = d.n * 4;
  auto reduce = [&](BufferId b, ReduceOp op) {
    if (vocab_parallel) st.tp_collective(CollectiveOp::kAllReduce, b, b, row_bytes, Phase::kForward, -1, mb, op);
  };
  const BufferId loss = cross_entropy_passes(st, mb, xd, h, vocab_parallel ? st.loss() : kNoId, reduce);
  return vocab_parallel ? kNoId : loss;
}

BufferId cross_entropy_bwd(StepState& st, int mb, const std::array<int64_t, 6>& xd, const HeadActs& h) {
  const StepDims& d = st.dims;
  const BufferId dlogits = st.allocate("dlogits", -1, mb, xd[0] * xd[1], d.dtype);
  st.kernel(Kernel::kCrossEntropyBwd, Phase::kBackward, -1, mb, xd, {h.logits, h.targets, h.max, h.sum}, {dlogits}, 0,
            d.dtype);
  for (BufferId id : {h.logits, h.targets, h.max, h.sum, h.logits_fp32}) st.release(id);
  return dlogits;
}

BufferId emit_embedding_forward(StepState& st, int unit, int chunk, int mb) {
  if (grid_tp(st)) return grid_embedding_forward(st, grid_end_ops(st), unit, chunk, mb);
  const StepDims& d = st.dims;
  auto [tokens, targets] = load_batch(st, mb);
  // With a single pipeline stage the head on this rank uses these targets; otherwise the last
  // stage loads its own.
  if (st.holds_head()) st.keep_targets(mb, targets);
  else st.release(targets);
  st.keep_tokens(chunk, mb, tokens);
  BufferId x = st.allocate("x_embed", -1, mb, d.n * d.hidden, d.dtype);
  st.kernel(Kernel::kEmbedding, Phase::kForward, -1, mb, {d.n, d.hidden, d.vocab, d.vocab_offset},
            {tokens, st.params(unit).table}, {x}, 0, d.dtype);
  return st.reduce_partial(x, -1, mb, Phase::kForward, "x_embed_shard");
}

void emit_embedding_backward(StepState& st, int unit, int chunk, int mb, BufferId dx) {
  if (grid_tp(st)) return grid_embedding_backward(st, grid_end_ops(st), unit, chunk, mb, dx);
  const StepDims& d = st.dims;
  BufferId tokens = st.take_tokens(chunk, mb);
  BufferId D = d.seq_parallel ? st.gather_seq(dx, -1, mb, Phase::kBackward, "dx_embed_full") : dx;
  st.kernel(Kernel::kEmbeddingBwd, Phase::kBackward, -1, mb, {d.n, d.hidden, d.vocab, d.vocab_offset}, {tokens, D},
            {st.grads(unit).table}, kAccumulateOut, d.dtype);
  if (D != dx) st.release(D);
  st.release(dx);
  st.release(tokens);
}

void emit_head_forward(StepState& st, int unit, int chunk, int mb, BufferId x) {
  if (grid_tp(st)) return grid_head_forward(st, grid_end_ops(st), unit, chunk, mb, x);
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  HeadActs h = head_acts(st, mb, x);
  st.norm_forward(Phase::kForward, -1, mb, x, w.ln1_w, w.ln1_b, &h.yf, &h.mean, &h.rstd, "yf", "meanf", "rstdf");
  BufferId Y = d.seq_parallel ? st.gather_seq(h.yf, -1, mb, Phase::kForward, "yf_full") : h.yf;
  h.logits = st.allocate("logits", -1, mb, d.n * d.vocab, d.dtype);
  st.linear_fwd(Phase::kForward, -1, mb, Y, w.table, h.logits, d.n, d.vocab, d.hidden);
  if (Y != h.yf) st.release(Y);
  const std::array<int64_t, 6> xd = xent_dims(st);
  // The framework's fp32 copy of the logits (software.cross_entropy_fp32): written by the cast
  // that opens the loss, kept as the softmax for the backward (Megatron's ctx.save_for_backward).
  // Only its memory is a buffer here; the passes over it are in the kernels' bytes (dims[4]).
  if (st.scenario.software.cross_entropy_fp32)
    h.logits_fp32 = st.allocate("logits_fp32", -1, mb, d.n * d.vocab, DType::kFp32, BufferRole::kWorkspace);
  cross_entropy_fwd(st, mb, xd, h, true);
  st.keep_head(chunk, mb, h);
}

BufferId emit_head_backward(StepState& st, int unit, int chunk, int mb) {
  if (grid_tp(st)) return grid_head_backward(st, grid_end_ops(st), unit, chunk, mb);
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  const UnitViews& g = st.grads(unit);
  HeadActs h = st.take_head(chunk, mb);
  const std::array<int64_t, 6> xd = xent_dims(st);
  const BufferId dlogits = cross_entropy_bwd(st, mb, xd, h);
  BufferId dy = st.column_parallel_backward(-1, mb, dlogits, h.yf, w.table, g.table, d.vocab, "yf_full", "dyf",
                                            "dyf_shard");
  st.release(dlogits);
  BufferId dx = st.norm_backward(-1, mb, dy, h.x, w.ln1_w, h.mean, h.rstd, g.ln1_w, g.ln1_b);
  for (BufferId id : {dy, h.x, h.yf, h.mean, h.rstd}) st.release(id);
  return dx;
}

}  // namespace tandem
