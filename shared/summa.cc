// The 2D linear layer as SUMMA (shared/tp2d.h). Rank (i, j) of the q x q grid holds X's block
// [i, j] (batch block i, in-feature block j), W's block of out block j and in block i, and writes
// Y's block [i, j] = sum_k X[i, k] W[k, j] (W as [in, out]). Each step's blocks are broadcast into
// fresh comm buffers one step ahead of the GEMM that uses them (double buffering, as Colossal-AI's
// Matmul_ABT_2D issues the next step's asynchronous broadcasts before the current GEMM), so the
// broadcasts run under the GEMMs.
//
// Per linear and micro-batch a rank takes part in (SUMMA as Colossal-AI's parallel_2d codes it for
// Optimus, Xu et al. 2021):
//   forward   q broadcasts of an X block (rows*in elements) in its row group and q of a W block
//             (out*in) in its column group;
//   backward  q broadcasts of a W block and q reduces of a partial dX block (rows*in) for dX;
//             q broadcasts of an X block and q reduces of a partial dW block (out*in) for dW.
#include "shared/tp2d.h"

namespace tandem {

GroupId tp2d_row_group(const StepState& st) { return Tp2dGroups(st.scenario, st.grid).row(st.coord); }
GroupId tp2d_column_group(const StepState& st) { return Tp2dGroups(st.scenario, st.grid).column(st.coord); }

void tp2d_collective(StepState& st, CollectiveOp op, GroupId group, int root, BufferId in, BufferId out,
                     int64_t bytes, Phase ph, int layer, int mb, DType dtype, Stream stream, ReduceOp reduce) {
  Collective c;
  c.op = op;
  c.reduce = reduce;
  c.group = group;
  c.root = root;
  c.bytes = bytes;
  c.dtype = dtype;
  c.phase = ph;
  c.layer = layer;
  c.microbatch = mb;
  c.buffers = {in, out};
  st.program.collective(std::move(c), stream);
}

namespace {

// A block of `elements` broadcast from index `root` of `group` (whose block is `mine` there) into
// a new comm buffer.
BufferId broadcast_block(StepState& st, const char* what, BufferId mine, GroupId group, int root, int64_t elements,
                         Phase ph, int layer, int mb) {
  const DType dt = st.dims.dtype;
  const BufferId b = st.allocate(what, layer, mb, elements, dt, BufferRole::kComm);
  tp2d_collective(st, CollectiveOp::kBroadcast, group, root, mine, b, elements * dtype_bytes(dt), ph, layer, mb, dt);
  return b;
}

// Runs step(k, blocks of step k) for k = 0..q-1, the blocks of step k+1 broadcast before step k.
template <class Issue, class Step>
void pipelined(int q, Issue issue, Step step) {
  auto next = issue(0);
  for (int k = 0; k < q; ++k) {
    auto cur = next;
    if (k + 1 < q) next = issue(k + 1);
    step(k, cur);
  }
}

struct Blocks {
  BufferId a = kNoId, b = kNoId;
};

}  // namespace

void summa_forward(StepState& st, Phase ph, int l, int mb, BufferId x, BufferId w, BufferId y, int64_t rows,
                   int64_t out, int64_t in) {
  const GroupId row = tp2d_row_group(st), col = tp2d_column_group(st);
  auto issue = [&](int k) {
    return Blocks{broadcast_block(st, "summa_x", x, row, k, rows * in, ph, l, mb),
                  broadcast_block(st, "summa_w", w, col, k, out * in, ph, l, mb)};
  };
  pipelined(st.dims.tp2d_q, issue, [&](int k, Blocks b) {
    st.kernel(Kernel::kGemm, ph, l, mb, {rows, out, in}, {b.a, b.b}, {y}, kTransB | (k > 0 ? kAccumulateOut : 0),
              st.dims.gemm_dtype(l, false));
    st.release(b.a);
    st.release(b.b);
  });
}

BufferId summa_backward(StepState& st, int l, int mb, BufferId dy, BufferId x, BufferId w, BufferId dw, int64_t rows,
                        int64_t out, int64_t in, const char* dx_name) {
  const StepDims& d = st.dims;
  const GroupId row = tp2d_row_group(st), col = tp2d_column_group(st);
  const DType dt = d.dtype;
  const int e = dtype_bytes(dt);
  const DType gemm = d.gemm_dtype(l, true);
  // dX[i, k] = sum_j dY[i, j] W[k, j]^T: rank (i, j) computes its term, reduced to (i, k).
  const BufferId dx = st.allocate(dx_name, l, mb, rows * in, dt);
  pipelined(
      d.tp2d_q, [&](int k) { return Blocks{broadcast_block(st, "summa_w", w, col, k, out * in, Phase::kBackward, l, mb)}; },
      [&](int k, Blocks b) {
        const BufferId part = st.allocate("summa_dx_part", l, mb, rows * in, dt, BufferRole::kComm);
        st.kernel(Kernel::kGemm, Phase::kBackward, l, mb, {rows, in, out}, {dy, b.a}, {part}, 0, gemm);
        st.release(b.a);
        tp2d_collective(st, CollectiveOp::kReduce, row, k, part, dx, rows * in * e, Phase::kBackward, l, mb, dt);
        st.release(part);
      });
  // dW[k, j] = sum_i X[i, k]^T dY[i, j]: rank (i, j) computes its term, reduced to (k, j). A reduce
  // writes only its root's output, so each rank's sum lands in `sum` at its own step k = i.
  const DType gt = st.program.buffer_at(dw).dtype;  // the gradients' type (fp32 main grads, or dtype)
  const BufferId sum = st.allocate("summa_dw", l, mb, out * in, gt, BufferRole::kComm);
  pipelined(
      d.tp2d_q, [&](int k) { return Blocks{broadcast_block(st, "summa_x", x, row, k, rows * in, Phase::kBackward, l, mb)}; },
      [&](int k, Blocks b) {
        const BufferId part = st.allocate("summa_dw_part", l, mb, out * in, gt, BufferRole::kComm);
        st.kernel(Kernel::kGemm, Phase::kBackward, l, mb, {out, in, rows}, {dy, b.a}, {part}, kTransA, gemm);
        st.release(b.a);
        tp2d_collective(st, CollectiveOp::kReduce, col, k, part, sum, out * in * dtype_bytes(gt), Phase::kBackward, l,
                        mb, gt);
        st.release(part);
      });
  st.kernel(Kernel::kAccumulate, Phase::kBackward, l, mb, {out * in}, {sum}, {dw}, 0, gt);
  st.release(sum);
  return dx;
}

// The vocabulary-parallel classifier (shared/tp2d.h), as Colossal-AI's Matmul_ABT_2D /
// Matmul_AB_2D / Matmul_ATB_2D order it: the next step's broadcasts issued before the current GEMM.
void summa_head_forward(StepState& st, int mb, BufferId yf, BufferId table, BufferId logits, int64_t rows,
                        int64_t vocab_part, int64_t hidden_part) {
  const StepDims& d = st.dims;
  const GroupId row = tp2d_row_group(st), col = tp2d_column_group(st);
  // logits[i, k] = sum_j yf[i, j] T[k, j]^T: rank (i, j) computes its term, reduced to (i, k).
  pipelined(
      d.tp2d_q,
      [&](int k) {
        return Blocks{broadcast_block(st, "summa_t", table, col, k, vocab_part * hidden_part, Phase::kForward, -1, mb)};
      },
      [&](int k, Blocks b) {
        const BufferId part = st.allocate("summa_logits_part", -1, mb, rows * vocab_part, d.dtype, BufferRole::kComm);
        st.kernel(Kernel::kGemm, Phase::kForward, -1, mb, {rows, vocab_part, hidden_part}, {yf, b.a}, {part}, kTransB,
                  d.gemm_dtype(-1, false));
        st.release(b.a);
        tp2d_collective(st, CollectiveOp::kReduce, row, k, part, logits, rows * vocab_part * dtype_bytes(d.dtype),
                        Phase::kForward, -1, mb, d.dtype);
        st.release(part);
      });
}

BufferId summa_head_backward(StepState& st, int mb, BufferId dlogits, BufferId yf, BufferId table, BufferId dtable,
                             int64_t rows, int64_t vocab_part, int64_t hidden_part) {
  const StepDims& d = st.dims;
  const GroupId row = tp2d_row_group(st), col = tp2d_column_group(st);
  const Phase ph = Phase::kBackward;
  const DType gemm = d.gemm_dtype(-1, true);
  // dyf[i, j] = sum_k dlogits[i, k] T[k, j] (Matmul_AB_2D: both blocks broadcast, local sums).
  const BufferId dyf = st.allocate("dyf", -1, mb, rows * hidden_part, d.dtype);
  pipelined(
      d.tp2d_q,
      [&](int k) {
        return Blocks{broadcast_block(st, "summa_dlogits", dlogits, row, k, rows * vocab_part, ph, -1, mb),
                      broadcast_block(st, "summa_t", table, col, k, vocab_part * hidden_part, ph, -1, mb)};
      },
      [&](int k, Blocks b) {
        st.kernel(Kernel::kGemm, ph, -1, mb, {rows, hidden_part, vocab_part}, {b.a, b.b}, {dyf},
                  k > 0 ? kAccumulateOut : 0, gemm);
        st.release(b.a);
        st.release(b.b);
      });
  // dT[k, j] = sum_i dlogits[i, k]^T yf[i, j]: rank (i, j) computes its term, reduced to (k, j)
  // (Matmul_ATB_2D); each rank's sum lands in `sum` at its own step k = i.
  const DType gt = st.program.buffer_at(dtable).dtype;
  const int64_t block = vocab_part * hidden_part;
  const BufferId sum = st.allocate("summa_dtable", -1, mb, block, gt, BufferRole::kComm);
  pipelined(
      d.tp2d_q,
      [&](int k) { return Blocks{broadcast_block(st, "summa_dlogits", dlogits, row, k, rows * vocab_part, ph, -1, mb)}; },
      [&](int k, Blocks b) {
        const BufferId part = st.allocate("summa_dtable_part", -1, mb, block, gt, BufferRole::kComm);
        st.kernel(Kernel::kGemm, ph, -1, mb, {vocab_part, hidden_part, rows}, {b.a, yf}, {part}, kTransA, gemm);
        st.release(b.a);
        tp2d_collective(st, CollectiveOp::kReduce, col, k, part, sum, block * dtype_bytes(gt), ph, -1, mb, gt);
        st.release(part);
      });
  st.kernel(Kernel::kAccumulate, ph, -1, mb, {block}, {sum}, {dtable}, 0, gt);
  st.release(sum);
  return dyf;
}

}  // namespace tandem
