#include "shared/step_state.h"

#include "shared/error.h"
#include "shared/tp2d_groups.h"
#include "shared/tp3d_groups.h"
#include "shared/sequence_split.h"

namespace tandem {
namespace {

// 2D, 2.5D and 3D: the rank's batch block of `batch` samples and feature block (/ q) of every
// width; the whole vocabulary (the loss is not split over the grid).
void split_on_grid(const ModelSpec& m, int64_t batch, int q, StepDims* d) {
  d->batch = batch;
  d->n = d->n_local = batch * m.seq_len;
  d->hidden = m.hidden / q;
  d->heads = m.heads / q;
  d->kv_heads = m.kv_heads / q;
  d->qkv_out = (d->heads + 2 * d->kv_heads) * d->head_dim;
  d->ffn = m.ffn_hidden / q;
  d->ffn_in = m.activation == Activation::kSwiglu ? 2 * d->ffn : d->ffn;
  d->vocab = m.vocab;
  d->vocab_offset = 0;
}

StepDims make_dims(const Scenario& sc, int tp_index, int sp_index) {
  const ModelSpec& m = sc.model;
  const StrategySpec& s = sc.strategy;
  StepDims d;
  d.tp = s.tp;
  d.batch = s.micro_batch;
  d.seq = m.seq_len;
  d.n = int64_t(s.micro_batch) * m.seq_len;
  d.seq_parallel = s.sp_mode == SpMode::kMegatron && s.tp > 1;
  d.n_local = d.seq_parallel ? d.n / s.tp : d.n;
  d.tp_overlap = d.seq_parallel && sc.software.tp_comm_overlap;
  d.hidden = m.hidden;
  d.heads = m.heads / s.tp;
  d.kv_heads = m.kv_heads / s.tp;
  d.head_dim = m.head_dim();
  d.qkv_out = (d.heads + 2 * d.kv_heads) * d.head_dim;
  d.ffn = m.ffn_hidden / s.tp;
  d.ffn_in = m.activation == Activation::kSwiglu ? 2 * d.ffn : d.ffn;
  d.vocab = m.vocab / s.tp;
  d.vocab_offset = d.vocab * tp_index;
  d.fp8 = s.dtype == DType::kFp8;
  d.dtype = d.fp8 ? DType::kBf16 : s.dtype;
  d.dropout = m.dropout > 0;
  d.flash = s.flash_attention;
  if ((s.tp_mode == TpMode::k2d || s.tp_mode == TpMode::k2p5d) && tp2d_side(sc) > 1) {
    const Tp2dCoord c = tp2d_coord(sc, tp_index);
    d.tp2d_q = c.q, d.tp2d_i = c.i, d.tp2d_j = c.j;
    d.tp2d_d = c.d, d.tp2d_k = c.k;
    split_on_grid(m, s.micro_batch / (c.q * c.d), c.q, &d);
  }
  if (s.tp_mode == TpMode::k3d && tp3d_side(sc) > 1) {
    const Tp3dCoord c = tp3d_coord(sc, tp_index);
    d.tp3d_q = c.q, d.tp3d_a = c.a, d.tp3d_b = c.b, d.tp3d_c = c.c;
    split_on_grid(m, s.micro_batch / (c.q * c.q), c.q, &d);
  }
  d.att_seq = d.seq;
  d.att_heads = d.heads;
  d.att_kv_heads = d.kv_heads;
  apply_sequence_split(sc, sp_index, &d);
  return d;
}

std::string where(const char* what, int chunk, int mb) {
  return std::string("step generator: ") + what + " of chunk " + std::to_string(chunk) + ", micro-batch " +
         std::to_string(mb);
}

}  // namespace

StepState::StepState(const Scenario& sc, const RankGrid& g, int r, const ChunkPlacement* chunks)
    : scenario(sc),
      grid(g),
      rank(r),
      coord(g.coord(r)),
      groups(sc, g),
      micro_batches(sc.strategy.micro_batches()),
      dims(make_dims(sc, coord.tp, coord.sp)),
      layout(make_param_layout(sc, coord.pp, coord.tp, chunks)),
      program(r),
      param_views_(layout.units.size()),
      grad_views_(layout.units.size()) {}

std::vector<int> StepState::chunk_units(int chunk) const {
  std::vector<int> u;
  for (size_t i = 0; i < layout.units.size(); ++i)
    if (layout.units[i].chunk == chunk) u.push_back(static_cast<int>(i));
  return u;
}

int StepState::pipeline_peer(int delta) const {
  RankCoord c = coord;
  c.pp = (c.pp + delta + grid.pp()) % grid.pp();
  return grid.rank(c);
}

int StepState::tensor_peer(int delta) const {
  RankCoord c = coord;
  c.tp = (c.tp + delta + grid.tp()) % grid.tp();
  return grid.rank(c);
}

std::string StepState::buffer_name(const char* what, int layer, int mb) const {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
  std::string s;
  if (layer >= 0) s.append("L").append(std::to_string(layer)).append(".");
  if (mb >= 0) s.append("m").append(std::to_string(mb)).append(".");
  s.append(what);
  return s;
}

BufferId StepState::allocate(const char* what, int layer, int mb, int64_t elements, DType dtype, BufferRole role,
                             Stream s) {
  BufferId id = program.buffer(buffer_name(what, layer, mb), elements * dtype_bytes(dtype), dtype, role);
  program.alloc(id, s);
  return id;
}

TaskId StepState::kernel(Kernel k, Phase phase, int layer, int mb, std::array<int64_t, 6> dims,
                         std::vector<BufferId> in, std::vector<BufferId> out, uint8_t flags, DType dtype) {
  Compute c;
  c.kernel = k;
  c.dtype = dtype;
  c.phase = phase;
  c.flags = flags;
  c.layer = layer;
  c.microbatch = mb;
  c.dims = dims;
  c.inputs = std::move(in);
  c.outputs = std::move(out);
  return program.compute(std::move(c));
}

void StepState::tp_collective(CollectiveOp op, BufferId in, BufferId out, int64_t bytes, Phase phase, int layer,
                              int mb, ReduceOp reduce, DType dtype, std::initializer_list<TaskId> extra) {
  if (dims.tp == 1) return;
  Collective c;
  c.op = op;
  c.reduce = reduce;
  c.group = tp_group();
  c.bytes = bytes;
  c.dtype = dtype;
  c.phase = phase;
  c.layer = layer;
  c.microbatch = mb;
  c.buffers = {in, out};
  program.collective(std::move(c), Stream::kComm, extra);
}

void StepState::linear_fwd(Phase ph, int layer, int mb, BufferId x, BufferId w, BufferId y, int64_t rows,
                           int64_t out, int64_t in) {
  const int64_t streams = gemm_streams > 1 ? gemm_streams : 0;
  kernel(Kernel::kGemm, ph, layer, mb, {rows, out, in, streams}, {x, w}, {y}, kTransB, dims.gemm_dtype(layer, false));
}

void StepState::linear_dgrad(int layer, int mb, BufferId dy, BufferId w, BufferId dx, int64_t rows, int64_t out,
                             int64_t in) {
  const int64_t streams = gemm_streams > 1 ? gemm_streams : 0;
  kernel(Kernel::kGemm, Phase::kBackward, layer, mb, {rows, in, out, streams}, {dy, w}, {dx}, 0,
         dims.gemm_dtype(layer, true));
}

void StepState::linear_wgrad(int layer, int mb, BufferId dy, BufferId x, BufferId dw, int64_t rows, int64_t out,
                             int64_t in) {
  kernel(Kernel::kGemm, Phase::kBackward, layer, mb, {out, in, rows}, {dy, x}, {dw}, kTransA | kAccumulateOut,
         dims.gemm_dtype(layer, true));
}

BufferId StepState::gather_seq(BufferId shard, int layer, int mb, Phase ph, const char* what) {
  BufferId full = allocate(what, layer, mb, dims.n * dims.hidden, dims.dtype, BufferRole::kComm);
  tp_collective(CollectiveOp::kAllGather, shard, full, dims.n * dims.hidden * dtype_bytes(dims.dtype), ph, layer, mb,
                ReduceOp::kSum, dims.dtype);
  return full;
}

BufferId StepState::reduce_partial(BufferId partial, int layer, int mb, Phase ph, const char* what, bool keep_partial) {
  const int64_t bytes = dims.n * dims.hidden * dtype_bytes(dims.dtype);
  if (!dims.seq_parallel) {
    tp_collective(CollectiveOp::kAllReduce, partial, partial, bytes, ph, layer, mb, ReduceOp::kSum, dims.dtype);
    return partial;
  }
  BufferId shard = allocate(what, layer, mb, dims.n_local * dims.hidden, dims.dtype);
  tp_collective(CollectiveOp::kReduceScatter, partial, shard, bytes, ph, layer, mb, ReduceOp::kSum, dims.dtype);
  // Not freed here when the caller runs more work under the reduce-scatter (keep_partial): see
  // column_parallel_backward. Otherwise the next kernel reads the shard, so the compute stream
  // waits for the reduce-scatter either way.
  if (!keep_partial) release(partial);
  return shard;
}

BufferId StepState::column_parallel_backward(int layer, int mb, BufferId dy, BufferId x, BufferId w, BufferId dw,
                                             int64_t out, const char* gathered, const char* dx_name,
                                             const char* dx_shard_name) {
  BufferId X = dims.seq_parallel ? gather_seq(x, layer, mb, Phase::kBackward, gathered) : x;
  BufferId dx = allocate(dx_name, layer, mb, dims.n * dims.hidden, dims.dtype);
  linear_dgrad(layer, mb, dy, w, dx, dims.n, out, dims.hidden);
  // Megatron-SP runs the weight-gradient GEMM under the dgrad's reduce-scatter and waits for it
  // after (Megatron-LM's async _reduce_scatter_base, the wgrad, then handle.wait():
  // megatron/mpu/layers.py:287-295 at 02bb1f5c86fc8c36d4a96a2b7ebcf63d53219369, the commit that
  // added sequence parallelism; megatron/core/tensor_parallel/layers.py:484-485, 526, 529-530 at
  // core_r0.8.0 baf94af3c667248865f23df73b9fb8e2395e6fd0): the full partial is freed on the
  // compute stream after the wgrad, which is that wait, and the program-order walk holds it
  // through the wgrad as the framework does (shared/memory_order.h: the plan stays an upper bound).
  const BufferId partial = dx;
  dx = reduce_partial(partial, layer, mb, Phase::kBackward, dx_shard_name, /*keep_partial=*/true);
  linear_wgrad(layer, mb, dy, X, dw, dims.n, out, dims.hidden);
  if (dx != partial) release(partial);
  if (X != x) release(X);
  return dx;
}

void StepState::norm_forward(Phase ph, int layer, int mb, BufferId x, BufferId w, BufferId bias, BufferId* y,
                             BufferId* mean, BufferId* rstd, const char* y_name, const char* mean_name,
                             const char* rstd_name) {
  const StepDims& d = dims;
  *y = allocate(y_name, layer, mb, d.n_local * d.hidden, d.dtype);
  *rstd = allocate(rstd_name, layer, mb, d.n_local, DType::kFp32);
  if (scenario.model.norm == Norm::kLayerNorm) {
    *mean = allocate(mean_name, layer, mb, d.n_local, DType::kFp32);
    kernel(Kernel::kLayerNorm, ph, layer, mb, {d.n_local, d.hidden}, {x, w, bias}, {*y, *mean, *rstd}, 0, d.dtype);
  } else {
    kernel(Kernel::kRmsNorm, ph, layer, mb, {d.n_local, d.hidden}, {x, w}, {*y, *rstd}, 0, d.dtype);
  }
}

BufferId StepState::norm_backward(int layer, int mb, BufferId dy, BufferId x, BufferId w, BufferId mean,
                                  BufferId rstd, BufferId dw, BufferId db) {
  const StepDims& d = dims;
  BufferId dx = allocate("dx", layer, mb, d.n_local * d.hidden, d.dtype);
  if (scenario.model.norm == Norm::kLayerNorm)
    kernel(Kernel::kLayerNormBwd, Phase::kBackward, layer, mb, {d.n_local, d.hidden}, {dy, x, w, mean, rstd},
           {dx, dw, db}, 0, d.dtype);
  else
    kernel(Kernel::kRmsNormBwd, Phase::kBackward, layer, mb, {d.n_local, d.hidden}, {dy, x, w, rstd}, {dx, dw}, 0,
           d.dtype);
  return dx;
}

void StepState::set_unit_views(int unit, const UnitViews& params, const UnitViews& grads) {
  param_views_.at(unit) = params;
  grad_views_.at(unit) = grads;
}

void StepState::allocate_loss() {
  if (loss_ != kNoId) throw Error("step generator: the loss buffer is allocated twice", ErrorKind::kInternal);
  loss_ = allocate("loss", -1, -1, 1, DType::kFp32);
}

void StepState::keep_layer(int chunk, const LayerActs& acts) { layers_[{chunk, acts.mb}].push_back(acts); }

LayerActs StepState::take_layer(int chunk, int mb) {
  auto it = layers_.find({chunk, mb});
  if (it == layers_.end() || it->second.empty())
    throw Error(where("no layer activations kept", chunk, mb), ErrorKind::kInternal);
  LayerActs acts = it->second.back();
  it->second.pop_back();
  if (it->second.empty()) layers_.erase(it);
  return acts;
}

void StepState::keep_head(int chunk, int mb, const HeadActs& acts) {
  if (!heads_.emplace(std::make_pair(chunk, mb), acts).second)
    throw Error(where("head activations kept twice", chunk, mb), ErrorKind::kInternal);
}

HeadActs StepState::take_head(int chunk, int mb) {
  auto it = heads_.find({chunk, mb});
  if (it == heads_.end()) throw Error(where("no head activations kept", chunk, mb), ErrorKind::kInternal);
  HeadActs acts = it->second;
  heads_.erase(it);
  return acts;
}

void StepState::keep_tokens(int chunk, int mb, BufferId tokens) {
  if (!tokens_.emplace(std::make_pair(chunk, mb), tokens).second)
    throw Error(where("tokens kept twice", chunk, mb), ErrorKind::kInternal);
}

BufferId StepState::take_tokens(int chunk, int mb) {
  auto it = tokens_.find({chunk, mb});
  if (it == tokens_.end()) throw Error(where("no tokens kept", chunk, mb), ErrorKind::kInternal);
  const BufferId tokens = it->second;
  tokens_.erase(it);
  return tokens;
}

void StepState::keep_targets(int mb, BufferId targets) {
  if (!targets_.emplace(mb, targets).second) throw Error(where("targets kept twice", 0, mb), ErrorKind::kInternal);
}

BufferId StepState::take_targets(int mb) {
  auto it = targets_.find(mb);
  if (it == targets_.end()) return kNoId;
  const BufferId targets = it->second;
  targets_.erase(it);
  return targets;
}

}  // namespace tandem
