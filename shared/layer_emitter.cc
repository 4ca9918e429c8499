// One transformer layer, forward and backward, for one micro-batch (Megatron-LM's 1D tensor
// parallelism; Korthikanti et al. 2022 for what is kept and recomputed).
//
// Forward keeps, per layer (no recompute): the layer input x and the attention-norm output y1
// (2sbh each), Q, K, V (6sbh/t), the softmax probabilities (2as^2b/t, unless flash attention),
// the attention dropout mask and output (as^2b/t + 2as^2b/t with dropout), the attention context
// (2sbh/t), the attention-output dropout mask (sbh), the MLP input x2 and norm output y2 (2sbh
// each), the fc1 output and activation (8sbh/t each for ffn = 4h) and the MLP dropout mask (sbh):
// s*b*h*(10 + 24/t + 5as/(ht)) bytes in 16-bit, Korthikanti's Table 2. With Megatron-SP the
// norm outputs, masks and x, x2 are kept as sequence shards (all /t). Selective recompute drops the
// attention core (probabilities, dropout) and recomputes it before the attention backward; full
// recompute keeps x alone and re-runs the whole forward first (Phase::kRecompute).
#include "shared/ring_attention.h"
#include "shared/ring_self_attention.h"
#include "shared/step_state.h"
#include "shared/tp3d.h"
#include "shared/ulysses.h"

namespace tandem {

bool keeps_core(const StepState& st) { return !st.dims.flash && !st.dims.ring_attention; }

// The attention core: Q K^T, softmax, (dropout), times V.
void attention_fwd(StepState& st, Phase ph, LayerActs& a, bool keep_probs) {
  const StepDims& d = st.dims;
  const int l = a.layer, mb = a.mb;
  if (d.ring_attention) return ring_attention_forward(st, ph, a);
  if (d.ring_self) return ring_self_attention_forward(st, ph, a);  // keeps the probabilities
  std::vector<BufferId> out = {a.ctx, a.lse};
  if (keep_probs) {
    const int64_t scores = d.batch * d.att_heads * d.att_seq * d.att_seq;
    a.probs = st.allocate("probs", l, mb, scores, d.dtype);
    out.push_back(a.probs);
    if (d.dropout) {
      a.amask = st.allocate("attn_mask", l, mb, scores, DType::kUint8);
      a.adrop = st.allocate("attn_drop", l, mb, scores, d.dtype);
      out.push_back(a.amask);
      out.push_back(a.adrop);
    }
  }
  st.kernel(Kernel::kAttention, ph, l, mb, {d.batch, d.att_seq, d.att_heads, d.att_kv_heads, d.head_dim}, {a.qkv}, out,
            kCausal, d.dtype);
}

void release_core(StepState& st, LayerActs& a) {
  st.release(a.probs);
  st.release(a.amask);
  st.release(a.adrop);
  a.probs = a.amask = a.adrop = kNoId;
}

// out[n_local, h] = dropout(branch) + residual; keeps the mask in *mask. With
// software.bias_dropout_fusion the framework runs the two as one jit-fused kernel (Megatron's
// bias_dropout_add_fused_train): the flags say so, for the cost.
BufferId residual(StepState& st, Phase ph, int l, int mb, BufferId branch, BufferId res, BufferId* mask,
                  const char* maskname, const char* outname) {
  const StepDims& d = st.dims;
  const int64_t n = d.n_local * d.hidden;
  BufferId in = branch;
  uint8_t add_flags = 0;
  if (d.dropout) {
    const bool fused = st.scenario.software.bias_dropout_fusion;
    *mask = st.allocate(maskname, l, mb, n, DType::kUint8);
    BufferId dropped = st.allocate("drop", l, mb, n, d.dtype);
    st.kernel(Kernel::kDropout, ph, l, mb, {n}, {branch}, {dropped, *mask}, fused ? kFusedIntoNext : 0, d.dtype);
    st.release(branch);
    in = dropped;
    add_flags = fused ? kFusedFromPrev : 0;
  }
  BufferId out = st.allocate(outname, l, mb, n, d.dtype);
  st.kernel(Kernel::kAdd, ph, l, mb, {n}, {res, in}, {out}, add_flags, d.dtype);
  st.release(in);
  return out;
}

void activation_fwd(StepState& st, Phase ph, LayerActs& a) {
  const StepDims& d = st.dims;
  a.a1 = st.allocate("a1", a.layer, a.mb, d.n * d.ffn, d.dtype);
  if (st.scenario.model.activation == Activation::kSwiglu)
    st.kernel(Kernel::kSwiglu, ph, a.layer, a.mb, {d.n, d.ffn}, {a.h1}, {a.a1}, 0, d.dtype);
  else
    st.kernel(Kernel::kGelu, ph, a.layer, a.mb, {d.n * d.ffn}, {a.h1}, {a.a1}, 0, d.dtype);
}

BufferId activation_bwd(StepState& st, LayerActs& a, BufferId da1) {
  const StepDims& d = st.dims;
  const int l = a.layer, mb = a.mb;
  const BufferId dh1 = st.allocate("dh1", l, mb, d.n * d.ffn_in, d.dtype);
  if (st.scenario.model.activation == Activation::kSwiglu)
    st.kernel(Kernel::kSwigluBwd, Phase::kBackward, l, mb, {d.n, d.ffn}, {a.h1, da1}, {dh1}, 0, d.dtype);
  else
    st.kernel(Kernel::kGeluBwd, Phase::kBackward, l, mb, {d.n * d.ffn}, {a.h1, da1}, {dh1}, 0, d.dtype);
  st.release(da1);
  st.release(a.h1);
  return dh1;
}

BufferId dropout_bwd(StepState& st, int l, int mb, BufferId dy, BufferId* mask, int64_t n, const char* name) {
  if (!st.dims.dropout) return dy;
  const BufferId dx = st.allocate(name, l, mb, n, st.dims.dtype);
  st.kernel(Kernel::kDropoutBwd, Phase::kBackward, l, mb, {n}, {dy, *mask}, {dx}, 0, st.dims.dtype);
  st.release(*mask);
  return dx;
}

namespace {

// Column-parallel linear on the layer's sequence shard x: *y [n, out_cols] = gather(x) W^T.
void column_parallel_fwd(StepState& st, Phase ph, int l, int mb, BufferId x, BufferId w, const char* gathered,
                         int64_t out_cols, BufferId* y, const char* yname) {
  const StepDims& d = st.dims;
  const int64_t in_cols = d.hidden;
  auto gemm = [&](BufferId in, BufferId out, int64_t rows) {
    st.linear_fwd(ph, l, mb, in, w, out, rows, out_cols, in_cols);
  };
  if (d.tp_overlap) {
    *y = st.allocate(yname, l, mb, d.n * out_cols, d.dtype);
    st.release(gather_gemm_overlapped(st, x, l, mb, gathered, *y, out_cols, gemm));
    return;
  }
  BufferId X = d.seq_parallel ? st.gather_seq(x, l, mb, ph, gathered) : x;
  *y = st.allocate(yname, l, mb, d.n * out_cols, d.dtype);
  gemm(X, *y, d.n);
  if (X != x) st.release(X);
}

// Row-parallel linear: x [n, in_cols] W^T summed over the tensor group; returns the sum, a
// sequence shard under Megatron-SP.
BufferId row_parallel_fwd(StepState& st, Phase ph, int l, int mb, BufferId x, BufferId w, int64_t in_cols,
                          const char* partial, const char* shard) {
  const StepDims& d = st.dims;
  auto gemm = [&](BufferId in, BufferId out, int64_t rows) {
    st.linear_fwd(ph, l, mb, in, w, out, rows, d.hidden, in_cols);
  };
  if (d.tp_overlap) return gemm_reduce_scatter_overlapped(st, x, in_cols, l, mb, ph, shard, gemm);
  BufferId y = st.allocate(partial, l, mb, d.n * d.hidden, d.dtype);
  gemm(x, y, d.n);
  return st.reduce_partial(y, l, mb, ph, shard);
}

// A row-parallel linear's backward: returns dx [n, in_cols] = gather(dy) W, named `dxname`, and
// accumulates dw += gather(dy)^T x; `gathered` names the gathered dy (Megatron-SP).
BufferId row_parallel_backward(StepState& st, int l, int mb, BufferId dy, BufferId x, BufferId w, BufferId dw,
                               int64_t in_cols, const char* gathered, const char* dxname) {
  const StepDims& d = st.dims;
  auto gemm = [&](BufferId in, BufferId out, int64_t rows) { st.linear_dgrad(l, mb, in, w, out, rows, d.hidden, in_cols); };
  BufferId G = kNoId, dx = kNoId;
  if (d.tp_overlap) {
    dx = st.allocate(dxname, l, mb, d.n * in_cols, d.dtype);
    G = gather_gemm_overlapped(st, dy, l, mb, gathered, dx, in_cols, gemm);
  } else {
    G = d.seq_parallel ? st.gather_seq(dy, l, mb, Phase::kBackward, gathered) : dy;
    dx = st.allocate(dxname, l, mb, d.n * in_cols, d.dtype);
    gemm(G, dx, d.n);
  }
  st.linear_wgrad(l, mb, G, x, dw, d.n, d.hidden, in_cols);
  if (G != dy) st.release(G);
  return dx;
}

}  // namespace

void emit_layer_forward(StepState& st, int unit, LayerActs& a, Phase ph, BufferId* out) {
  if (grid_tp(st)) return grid_layer_forward(st, grid_layer_ops(st), unit, a, ph, out);
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  const int l = a.layer, mb = a.mb;
  const Recompute rc = st.scenario.strategy.recompute;
  const bool recompute = ph == Phase::kRecompute;

  // Attention block.
  st.norm_forward(ph, l, mb, a.x, w.ln1_w, w.ln1_b, &a.y1, &a.mean1, &a.rstd1, "y1", "mean1", "rstd1");
  column_parallel_fwd(st, ph, l, mb, a.y1, w.qkv, "y1_full", d.qkv_out, &a.qkv, "qkv");
  if (d.ulysses) ulysses_qkv_to_heads(st, ph, a);
  a.ctx = st.allocate("ctx", l, mb, d.n * d.heads * d.head_dim, d.dtype);
  if (!d.ring_self) a.lse = st.allocate("lse", l, mb, d.batch * d.att_heads * d.att_seq, DType::kFp32);
  attention_fwd(st, ph, a, keeps_core(st));
  if (rc == Recompute::kSelective) release_core(st, a);
  if (d.ulysses) ulysses_ctx_to_seq(st, ph, a);
  const BufferId ctx = d.ulysses ? a.ctx_seq : a.ctx;
  BufferId o = row_parallel_fwd(st, ph, l, mb, ctx, w.o, d.heads * d.head_dim, "o", "o_shard");
  a.x2 = residual(st, ph, l, mb, o, a.x, &a.omask, "attn_out_mask", "x2");

  // MLP block.
  st.norm_forward(ph, l, mb, a.x2, w.ln2_w, w.ln2_b, &a.y2, &a.mean2, &a.rstd2, "y2", "mean2", "rstd2");
  column_parallel_fwd(st, ph, l, mb, a.y2, w.fc1, "y2_full", d.ffn_in, &a.h1, "h1");
  activation_fwd(st, ph, a);
  BufferId h2 = row_parallel_fwd(st, ph, l, mb, a.a1, w.fc2, d.ffn, "h2", "h2_shard");
  BufferId x3 = residual(st, ph, l, mb, h2, a.x2, &a.hmask, "mlp_out_mask", recompute ? "x3_discard" : "x3");
  if (recompute) st.release(x3);
  else *out = x3;

  if (rc == Recompute::kFull && !recompute) {
    // Keep the layer input alone; everything else comes back in the backward's recompute.
    for (BufferId* id : {&a.mean1, &a.rstd1, &a.y1, &a.qkv, &a.ctx, &a.lse, &a.probs, &a.amask, &a.adrop,
                         &a.omask, &a.x2, &a.mean2, &a.rstd2, &a.y2, &a.h1, &a.a1, &a.hmask, &a.ctx_seq}) {
      st.release(*id);
      *id = kNoId;
    }
  }
}

BufferId emit_layer_backward(StepState& st, int unit, LayerActs& a, BufferId dout) {
  if (grid_tp(st)) return grid_layer_backward(st, grid_layer_ops(st), unit, a, dout);
  const StepDims& d = st.dims;
  const UnitViews& w = st.params(unit);
  const UnitViews& g = st.grads(unit);
  const int l = a.layer, mb = a.mb;
  const Recompute rc = st.scenario.strategy.recompute;
  const int64_t nh = d.n_local * d.hidden;

  if (rc == Recompute::kFull) emit_layer_forward(st, unit, a, Phase::kRecompute, nullptr);

  // MLP block.
  const BufferId dh2 = dropout_bwd(st, l, mb, dout, &a.hmask, nh, "dh2");
  BufferId da1 = row_parallel_backward(st, l, mb, dh2, a.a1, w.fc2, g.fc2, d.ffn, "dh2_full", "da1");
  if (dh2 != dout) st.release(dh2);
  st.release(a.a1);
  const BufferId dh1 = activation_bwd(st, a, da1);
  BufferId dy2 = st.column_parallel_backward(l, mb, dh1, a.y2, w.fc1, g.fc1, d.ffn_in, "y2_full", "dy2", "dy2_shard");
  st.release(dh1);
  BufferId dx2 = st.norm_backward(l, mb, dy2, a.x2, w.ln2_w, a.mean2, a.rstd2, g.ln2_w, g.ln2_b);
  st.release(dy2);
  for (BufferId id : {a.y2, a.mean2, a.rstd2, a.x2}) st.release(id);
  st.kernel(Kernel::kAccumulate, Phase::kBackward, l, mb, {nh}, {dout}, {dx2}, 0, d.dtype);
  st.release(dout);

  // Attention block.
  const BufferId dob = dropout_bwd(st, l, mb, dx2, &a.omask, nh, "do");
  BufferId dctx = row_parallel_backward(st, l, mb, dob, d.ulysses ? a.ctx_seq : a.ctx, w.o, g.o, d.heads * d.head_dim,
                                        "do_full", "dctx");
  if (dob != dx2) st.release(dob);
  if (d.ulysses) {
    st.release(a.ctx_seq);
    dctx = ulysses_dctx_to_heads(st, a, dctx);
  }
  if (rc == Recompute::kSelective && keeps_core(st)) attention_fwd(st, Phase::kRecompute, a, true);
  std::vector<BufferId> in = {a.qkv, a.ctx, dctx, a.lse};
  for (BufferId id : {a.probs, a.amask, a.adrop})
    if (id != kNoId) in.push_back(id);
  BufferId dqkv = kNoId;
  if (d.ring_attention) {
    dqkv = ring_attention_backward(st, a, dctx);
  } else if (d.ring_self) {
    dqkv = ring_self_attention_backward(st, a, dctx);
  } else {
    dqkv = st.allocate("dqkv", l, mb, d.n * d.qkv_out, d.dtype);
    st.kernel(Kernel::kAttentionBwd, Phase::kBackward, l, mb,
              {d.batch, d.att_seq, d.att_heads, d.att_kv_heads, d.head_dim}, in, {dqkv}, kCausal, d.dtype);
  }
  st.release(dctx);
  release_core(st, a);
  st.release(a.ctx);
  st.release(a.lse);
  if (d.ulysses) dqkv = ulysses_dqkv_to_seq(st, a, dqkv);
  BufferId dy1 = st.column_parallel_backward(l, mb, dqkv, a.y1, w.qkv, g.qkv, d.qkv_out, "y1_full", "dy1", "dy1_shard");
  st.release(dqkv);
  st.release(a.qkv);
  BufferId dx = st.norm_backward(l, mb, dy1, a.x, w.ln1_w, a.mean1, a.rstd1, g.ln1_w, g.ln1_b);
  st.release(dy1);
  for (BufferId id : {a.y1, a.mean1, a.rstd1, a.x}) st.release(id);
  st.kernel(Kernel::kAccumulate, Phase::kBackward, l, mb, {nh}, {dx2}, {dx}, 0, d.dtype);
  st.release(dx2);
  return dx;
}

}  // namespace tandem
