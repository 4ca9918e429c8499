// The 3D linear layer (shared/tp3d.h). Rank (a, b, c) holds X [rows, in] (rows = its batch block,
// in = its input feature block) and W's rows block [out/q, in] of its out block; Y [rows, out]:
//   X' [q rows, in]  = all-gather X over the input axis (A for qkv and fc1, C for o and fc2)
//   W' [out, in]     = all-gather W over B (qkv: q, k and v each, fc1 under SwiGLU gate and up
//                      each, so that W' is [Q; K; V] of the gathered blocks as the attention reads it)
//   Y' [q rows, out] = X' W'^T, partial over the input feature blocks
//   Y                = reduce-scatter Y' over the output axis (C, or A).
// Per linear and micro-batch a rank moves, in elements (the IR's bytes: an all-gather counts its
// output, a reduce-scatter its input): forward q*rows*in + out*in gathered, q*rows*out
// reduce-scattered; backward q*rows*out (dY) + out*in (W') + q*rows*in (X') gathered,
// q*rows*in (dX) + out*in (dW) reduce-scattered.
#include "shared/tp3d.h"

#include <vector>

namespace tandem {

GroupId tp3d_group(const StepState& st, int axis) { return Tp3dGroups(st.scenario, st.grid).axis(st.coord, axis); }

namespace {

// qkv and fc1 read their input on axis C and gather it over A; o and fc2 the other way round.
int input_axis(int which) { return which % 2 == 0 ? kTp3dAxisA : kTp3dAxisC; }
int output_axis(int which) { return which % 2 == 0 ? kTp3dAxisC : kTp3dAxisA; }

// The gathered row counts of W' that are gathered separately (they sum to out).
std::vector<int64_t> weight_parts(const StepState& st, int which, int64_t out) {
  const StepDims& d = st.dims;
  if (which == 0) return {d.heads * d.head_dim, d.kv_heads * d.head_dim, d.kv_heads * d.head_dim};
  if (which == 2 && d.ffn_in != d.ffn) return {d.ffn, d.ffn};
  return {out};
}

BufferId gather(StepState& st, const char* what, BufferId mine, int axis, int64_t elements, Phase ph, int l, int mb) {
  const DType dt = st.dims.dtype;
  const BufferId all = st.allocate(what, l, mb, elements, dt, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kAllGather, tp3d_group(st, axis), -1, mine, all, elements * dtype_bytes(dt), ph,
                  l, mb, dt);
  return all;
}

// Reduce-scatters `whole` (freed) over `axis` into `part` (elements of whole / q).
void reduce_scatter(StepState& st, BufferId whole, BufferId part, int axis, Phase ph, int l, int mb) {
  const Buffer& b = st.program.buffer_at(whole);
  tp2d_collective(st, CollectiveOp::kReduceScatter, tp3d_group(st, axis), -1, whole, part, b.bytes, ph, l, mb, b.dtype);
  st.release(whole);
}

// Runs f(local view, gathered view, gathered elements) for each separately gathered part of W.
template <class F>
void for_weight_parts(StepState& st, int which, BufferId w, BufferId all, int64_t out, int64_t in, F f) {
  const std::vector<int64_t> parts = weight_parts(st, which, out);
  if (parts.size() == 1) return f(w, all, out * in);
  const int q = st.dims.tp3d_q;
  const DType wt = st.program.buffer_at(w).dtype, at = st.program.buffer_at(all).dtype;
  int64_t off = 0;
  for (int64_t rows : parts) {
    const BufferId mine = st.program.view(w, off / q * in * dtype_bytes(wt), rows / q * in * dtype_bytes(wt), wt,
                                          "tp3d_w_part");
    const BufferId whole =
        st.program.view(all, off * in * dtype_bytes(at), rows * in * dtype_bytes(at), at, "tp3d_w_all_part");
    f(mine, whole, rows * in);
    off += rows;
  }
}

BufferId gather_weight(StepState& st, int which, BufferId w, int64_t out, int64_t in, Phase ph, int l, int mb) {
  const DType dt = st.dims.dtype;
  const BufferId all = st.allocate("tp3d_w", l, mb, out * in, dt, BufferRole::kComm);
  for_weight_parts(st, which, w, all, out, in, [&](BufferId mine, BufferId whole, int64_t elements) {
    tp2d_collective(st, CollectiveOp::kAllGather, tp3d_group(st, kTp3dAxisB), -1, mine, whole,
                    elements * dtype_bytes(dt), ph, l, mb, dt);
  });
  return all;
}

void linear_forward(StepState& st, Phase ph, int l, int mb, int which, BufferId x, BufferId w, BufferId y,
                    int64_t rows, int64_t out, int64_t in) {
  const int q = st.dims.tp3d_q;
  const BufferId xa = gather(st, "tp3d_x", x, input_axis(which), q * rows * in, ph, l, mb);
  const BufferId wa = gather_weight(st, which, w, out, in, ph, l, mb);
  const BufferId ya = st.allocate("tp3d_y", l, mb, q * rows * out, st.dims.dtype, BufferRole::kComm);
  st.linear_fwd(ph, l, mb, xa, wa, ya, q * rows, out, in);
  st.release(xa);
  st.release(wa);
  reduce_scatter(st, ya, y, output_axis(which), ph, l, mb);
}

BufferId linear_backward(StepState& st, int l, int mb, int which, BufferId dy, BufferId x, BufferId w, BufferId dw,
                         int64_t rows, int64_t out, int64_t in, const char* dx_name) {
  const StepDims& d = st.dims;
  const int q = d.tp3d_q;
  const Phase ph = Phase::kBackward;
  const BufferId dya = gather(st, "tp3d_dy", dy, output_axis(which), q * rows * out, ph, l, mb);
  const BufferId wa = gather_weight(st, which, w, out, in, ph, l, mb);
  const BufferId dxa = st.allocate("tp3d_dx", l, mb, q * rows * in, d.dtype, BufferRole::kComm);
  st.linear_dgrad(l, mb, dya, wa, dxa, q * rows, out, in);
  st.release(wa);
  const BufferId dx = st.allocate(dx_name, l, mb, rows * in, d.dtype);
  reduce_scatter(st, dxa, dx, input_axis(which), ph, l, mb);
  // dW' = dY'^T X' over the gathered batch, reduce-scattered over B into this rank's rows.
  const BufferId xa = gather(st, "tp3d_x", x, input_axis(which), q * rows * in, ph, l, mb);
  const DType gt = st.program.buffer_at(dw).dtype;  // the gradients' type (fp32 main grads, or dtype)
  const BufferId dwa = st.allocate("tp3d_dw", l, mb, out * in, gt, BufferRole::kComm);
  st.kernel(Kernel::kGemm, ph, l, mb, {out, in, q * rows}, {dya, xa}, {dwa}, kTransA, d.gemm_dtype(l, true));
  st.release(dya);
  st.release(xa);
  const BufferId dwl = st.allocate("tp3d_dw_block", l, mb, out / q * in, gt, BufferRole::kComm);
  for_weight_parts(st, which, dwl, dwa, out, in, [&](BufferId mine, BufferId whole, int64_t elements) {
    tp2d_collective(st, CollectiveOp::kReduceScatter, tp3d_group(st, kTp3dAxisB), -1, whole, mine,
                    elements * dtype_bytes(gt), ph, l, mb, gt);
  });
  st.release(dwa);
  st.kernel(Kernel::kAccumulate, ph, l, mb, {out / q * in}, {dwl}, {dw}, 0, gt);
  st.release(dwl);
  return dx;
}

}  // namespace

GridLayerOps tp3d_layer_ops(const StepState& st) {
  GridLayerOps ops;
  ops.norm_group = tp3d_group(st, kTp3dAxisC);
  ops.norm_parts = st.dims.tp3d_q;
  ops.linear_fwd = linear_forward;
  ops.linear_bwd = linear_backward;
  return ops;
}

}  // namespace tandem
