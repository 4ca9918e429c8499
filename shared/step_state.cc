#include "shared/step_state.h"

namespace tandem {

StepState::StepState(const Scenario& scenario, const RankGrid& g, int r)
    : sc(scenario),
      grid(g),
      rank(r),
      coord(g.coord(r)),
      gids(scenario, g),
      micro_batches(scenario.strategy.micro_batches()),
      b(r),
      lay(make_param_layout(scenario, coord.pp, coord.tp)) {
  const ModelSpec& m = sc.model;
  const StrategySpec& s = sc.strategy;
  d.tp = s.tp;
  d.batch = s.micro_batch;
  d.seq = m.seq_len;
  d.n = int64_t(s.micro_batch) * m.seq_len;
  d.seq_parallel = s.sp_mode == SpMode::kMegatron && s.tp > 1;
  d.n_local = d.seq_parallel ? d.n / s.tp : d.n;
  d.tp_overlap = d.seq_parallel && s.tp_comm_overlap;
  d.hidden = m.hidden;
  d.heads = m.heads / s.tp;
  d.kv_heads = m.kv_heads / s.tp;
  d.head_dim = m.head_dim();
  d.qkv_out = (d.heads + 2 * d.kv_heads) * d.head_dim;
  d.ffn = m.ffn_hidden / s.tp;
  d.ffn_in = m.activation == Activation::kSwiglu ? 2 * d.ffn : d.ffn;
  d.vocab = m.vocab / s.tp;
  d.vocab_offset = d.vocab * coord.tp;
  d.dtype = s.dtype;
  d.dropout = m.dropout > 0;
  d.flash = s.flash_attention;
}

std::string StepState::name(const char* what, int layer, int mb) const {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
  std::string s;
  if (layer >= 0) s.append("L").append(std::to_string(layer)).append(".");
  if (mb >= 0) s.append("m").append(std::to_string(mb)).append(".");
  s.append(what);
  return s;
}

BufferId StepState::make(const char* what, int layer, int mb, int64_t elements, DType dtype, BufferRole role,
                         Stream s) {
  BufferId id = b.buffer(name(what, layer, mb), elements * dtype_bytes(dtype), dtype, role);
  b.alloc(id, s);
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
  return b.compute(std::move(c));
}

void StepState::tp_collective(CollectiveOp op, BufferId in, BufferId out, int64_t bytes, Phase phase, int layer,
                              int mb, ReduceOp reduce, DType dtype) {
  if (d.tp == 1) return;
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
  b.collective(std::move(c), Stream::kComm);
}

void StepState::linear_fwd(Phase ph, int layer, int mb, BufferId x, BufferId w, BufferId y, int64_t rows,
                           int64_t out, int64_t in) {
  kernel(Kernel::kGemm, ph, layer, mb, {rows, out, in}, {x, w}, {y}, kTransB, d.dtype);
}

void StepState::linear_dgrad(int layer, int mb, BufferId dy, BufferId w, BufferId dx, int64_t rows, int64_t out,
                             int64_t in) {
  kernel(Kernel::kGemm, Phase::kBackward, layer, mb, {rows, in, out}, {dy, w}, {dx}, 0, d.dtype);
}

void StepState::linear_wgrad(int layer, int mb, BufferId dy, BufferId x, BufferId dw, int64_t rows, int64_t out,
                             int64_t in) {
  kernel(Kernel::kGemm, Phase::kBackward, layer, mb, {out, in, rows}, {dy, x}, {dw}, kTransA | kAccumulateOut,
         d.dtype);
}

BufferId StepState::gather_seq(BufferId shard, int layer, int mb, Phase ph, const char* what) {
  BufferId full = make(what, layer, mb, d.n * d.hidden, d.dtype, BufferRole::kComm);
  tp_collective(CollectiveOp::kAllGather, shard, full, d.n * d.hidden * dtype_bytes(d.dtype), ph, layer, mb,
                ReduceOp::kSum, d.dtype);
  return full;
}

BufferId StepState::reduce_partial(BufferId partial, int layer, int mb, Phase ph, const char* what) {
  const int64_t bytes = d.n * d.hidden * dtype_bytes(d.dtype);
  if (!d.seq_parallel) {
    tp_collective(CollectiveOp::kAllReduce, partial, partial, bytes, ph, layer, mb, ReduceOp::kSum, d.dtype);
    return partial;
  }
  BufferId shard = make(what, layer, mb, d.n_local * d.hidden, d.dtype);
  tp_collective(CollectiveOp::kReduceScatter, partial, shard, bytes, ph, layer, mb, ReduceOp::kSum, d.dtype);
  release(partial);
  return shard;
}

}  // namespace tandem
