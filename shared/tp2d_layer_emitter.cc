// One transformer layer under 2D tensor parallelism (shared/tp2d.h), and under 3D with the 3D
// linears (grid_layer_*, GridLayerOps; shared/tp3d.h): the same layer as
// layer_emitter.cc (what is kept, recomputed and freed follows it step for step) on the rank's
// batch block i and feature block j, with the four linears as SUMMA and the layer norms' row
// statistics all-reduced over the row group.
//
// Activations kept per layer are those of 1D with every [b, s, h'] tensor divided by q*q (batch
// by q, features by q) and the attention scores [b, a, s, s] too (batch and heads by q): the
// Optimus paper's point (its abstract: activations "partitioned and distributed among devices")
// that the 2D layout divides the activations by the whole tensor-parallel degree, where 1D keeps
// the layer input and norm outputs whole.
#include "shared/tp2d.h"

namespace tandem {

void split_norm_forward(StepState& st, const GridLayerOps& ops, Phase ph, int l, int mb, BufferId x, BufferId w,
                        BufferId b, BufferId* y, BufferId* mean, BufferId* rstd, const char* y_name,
                        const char* mean_name, const char* rstd_name) {
  const StepDims& d = st.dims;
  const GroupId row = ops.norm_group;
  const int64_t full = d.hidden * ops.norm_parts;
  *mean = st.allocate(mean_name, l, mb, d.n, DType::kFp32);
  st.kernel(Kernel::kLayerNormPartialMean, ph, l, mb, {d.n, d.hidden, full}, {x}, {*mean}, 0, d.dtype);
  tp2d_collective(st, CollectiveOp::kAllReduce, row, -1, *mean, *mean, d.n * 4, ph, l, mb, DType::kFp32);
  const BufferId var = st.allocate("norm_var", l, mb, d.n, DType::kFp32, BufferRole::kComm);
  st.kernel(Kernel::kLayerNormPartialVar, ph, l, mb, {d.n, d.hidden, full}, {x, *mean}, {var}, 0, d.dtype);
  tp2d_collective(st, CollectiveOp::kAllReduce, row, -1, var, var, d.n * 4, ph, l, mb, DType::kFp32);
  *y = st.allocate(y_name, l, mb, d.n * d.hidden, d.dtype);
  *rstd = st.allocate(rstd_name, l, mb, d.n, DType::kFp32);
  st.kernel(Kernel::kLayerNormApply, ph, l, mb, {d.n, d.hidden}, {x, w, b, *mean, var}, {*y, *rstd}, 0, d.dtype);
  st.release(var);
}

BufferId split_norm_backward(StepState& st, const GridLayerOps& ops, int l, int mb, BufferId dy, BufferId x,
                             BufferId w, BufferId mean, BufferId rstd, BufferId dw, BufferId db) {
  const StepDims& d = st.dims;
  const int64_t full = d.hidden * ops.norm_parts;
  const BufferId sums = st.allocate("norm_sums", l, mb, 2 * d.n, DType::kFp32, BufferRole::kComm);
  st.kernel(Kernel::kLayerNormBwdPartialSums, Phase::kBackward, l, mb, {d.n, d.hidden, full}, {dy, x, w, mean, rstd},
            {sums}, 0, d.dtype);
  tp2d_collective(st, CollectiveOp::kAllReduce, ops.norm_group, -1, sums, sums, 2 * d.n * 4, Phase::kBackward, l, mb,
                  DType::kFp32);
  const BufferId dx = st.allocate("dx", l, mb, d.n * d.hidden, d.dtype);
  st.kernel(Kernel::kLayerNormBwdApply, Phase::kBackward, l, mb, {d.n, d.hidden}, {dy, x, w, mean, rstd, sums},
            {dx, dw, db}, 0, d.dtype);
  st.release(sums);
  return dx;
}

void grid_layer_forward(StepState& st, const GridLayerOps& ops, int unit, LayerActs& a, Phase ph, BufferId* out) {
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  const int l = a.layer, mb = a.mb;
  const Recompute rc = st.scenario.strategy.recompute;
  const bool recompute = ph == Phase::kRecompute;

  // Attention block.
  split_norm_forward(st, ops, ph, l, mb, a.x, w.ln1_w, w.ln1_b, &a.y1, &a.mean1, &a.rstd1, "y1", "mean1", "rstd1");
  a.qkv = st.allocate("qkv", l, mb, d.n * d.qkv_out, d.dtype);
  ops.linear_fwd(st, ph, l, mb, 0, a.y1, w.qkv, a.qkv, d.n, d.qkv_out, d.hidden);
  a.ctx = st.allocate("ctx", l, mb, d.n * d.heads * d.head_dim, d.dtype);
  a.lse = st.allocate("lse", l, mb, d.batch * d.heads * d.seq, DType::kFp32);
  attention_fwd(st, ph, a, keeps_core(st));
  if (rc == Recompute::kSelective) release_core(st, a);
  const BufferId o = st.allocate("o", l, mb, d.n * d.hidden, d.dtype);
  ops.linear_fwd(st, ph, l, mb, 1, a.ctx, w.o, o, d.n, d.hidden, d.heads * d.head_dim);
  a.x2 = residual(st, ph, l, mb, o, a.x, &a.omask, "attn_out_mask", "x2");

  // MLP block.
  split_norm_forward(st, ops, ph, l, mb, a.x2, w.ln2_w, w.ln2_b, &a.y2, &a.mean2, &a.rstd2, "y2", "mean2", "rstd2");
  a.h1 = st.allocate("h1", l, mb, d.n * d.ffn_in, d.dtype);
  ops.linear_fwd(st, ph, l, mb, 2, a.y2, w.fc1, a.h1, d.n, d.ffn_in, d.hidden);
  activation_fwd(st, ph, a);
  const BufferId h2 = st.allocate("h2", l, mb, d.n * d.hidden, d.dtype);
  ops.linear_fwd(st, ph, l, mb, 3, a.a1, w.fc2, h2, d.n, d.hidden, d.ffn);
  const BufferId x3 = residual(st, ph, l, mb, h2, a.x2, &a.hmask, "mlp_out_mask", recompute ? "x3_discard" : "x3");
  if (recompute) st.release(x3);
  else *out = x3;

  if (rc == Recompute::kFull && !recompute) {
    for (BufferId* id : {&a.mean1, &a.rstd1, &a.y1, &a.qkv, &a.ctx, &a.lse, &a.probs, &a.amask, &a.adrop,
                         &a.omask, &a.x2, &a.mean2, &a.rstd2, &a.y2, &a.h1, &a.a1, &a.hmask}) {
      st.release(*id);
      *id = kNoId;
    }
  }
}

BufferId grid_layer_backward(StepState& st, const GridLayerOps& ops, int unit, LayerActs& a, BufferId dout) {
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  const UnitViews& g = st.grads(unit);
  const int l = a.layer, mb = a.mb;
  const Recompute rc = st.scenario.strategy.recompute;
  const int64_t nh = d.n * d.hidden;

  if (rc == Recompute::kFull) grid_layer_forward(st, ops, unit, a, Phase::kRecompute, nullptr);

  // MLP block.
  const BufferId dh2 = dropout_bwd(st, l, mb, dout, &a.hmask, nh, "dh2");
  const BufferId da1 = ops.linear_bwd(st, l, mb, 3, dh2, a.a1, w.fc2, g.fc2, d.n, d.hidden, d.ffn, "da1");
  if (dh2 != dout) st.release(dh2);
  st.release(a.a1);
  const BufferId dh1 = activation_bwd(st, a, da1);
  const BufferId dy2 = ops.linear_bwd(st, l, mb, 2, dh1, a.y2, w.fc1, g.fc1, d.n, d.ffn_in, d.hidden, "dy2");
  st.release(dh1);
  const BufferId dx2 = split_norm_backward(st, ops, l, mb, dy2, a.x2, w.ln2_w, a.mean2, a.rstd2, g.ln2_w, g.ln2_b);
  st.release(dy2);
  for (BufferId id : {a.y2, a.mean2, a.rstd2, a.x2}) st.release(id);
  st.kernel(Kernel::kAccumulate, Phase::kBackward, l, mb, {nh}, {dout}, {dx2}, 0, d.dtype);
  st.release(dout);

  // Attention block.
  const BufferId dob = dropout_bwd(st, l, mb, dx2, &a.omask, nh, "do");
  const BufferId dctx = ops.linear_bwd(st, l, mb, 1, dob, a.ctx, w.o, g.o, d.n, d.hidden, d.heads * d.head_dim, "dctx");
  if (dob != dx2) st.release(dob);
  if (rc == Recompute::kSelective && keeps_core(st)) attention_fwd(st, Phase::kRecompute, a, true);
  std::vector<BufferId> in = {a.qkv, a.ctx, dctx, a.lse};
  for (BufferId id : {a.probs, a.amask, a.adrop})
    if (id != kNoId) in.push_back(id);
  const BufferId dqkv = st.allocate("dqkv", l, mb, d.n * d.qkv_out, d.dtype);
  st.kernel(Kernel::kAttentionBwd, Phase::kBackward, l, mb, {d.batch, d.seq, d.heads, d.kv_heads, d.head_dim}, in,
            {dqkv}, kCausal, d.dtype);
  st.release(dctx);
  release_core(st, a);
  st.release(a.ctx);
  st.release(a.lse);
  const BufferId dy1 = ops.linear_bwd(st, l, mb, 0, dqkv, a.y1, w.qkv, g.qkv, d.n, d.qkv_out, d.hidden, "dy1");
  st.release(dqkv);
  st.release(a.qkv);
  const BufferId dx = split_norm_backward(st, ops, l, mb, dy1, a.x, w.ln1_w, a.mean1, a.rstd1, g.ln1_w, g.ln1_b);
  st.release(dy1);
  for (BufferId id : {a.y1, a.mean1, a.rstd1, a.x}) st.release(id);
  st.kernel(Kernel::kAccumulate, Phase::kBackward, l, mb, {nh}, {dx2}, {dx}, 0, d.dtype);
  st.release(dx2);
  return dx;
}

GridLayerOps tp2d_layer_ops(const StepState& st) {
  GridLayerOps ops;
  ops.norm_group = tp2d_row_group(st);
  ops.norm_parts = st.dims.tp2d_q;
  ops.linear_fwd = [](StepState& s, Phase ph, int l, int mb, int, BufferId x, BufferId w, BufferId y, int64_t rows,
                      int64_t out, int64_t in) { summa_forward(s, ph, l, mb, x, w, y, rows, out, in); };
  ops.linear_bwd = [](StepState& s, int l, int mb, int, BufferId dy, BufferId x, BufferId w, BufferId dw, int64_t rows,
                      int64_t out, int64_t in, const char* dx_name) {
    return summa_backward(s, l, mb, dy, x, w, dw, rows, out, in, dx_name);
  };
  return ops;
}

}  // namespace tandem
