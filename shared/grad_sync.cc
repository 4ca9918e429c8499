// Model state across the data-parallel group: where parameters, gradients and optimizer states
// live, when gradients are reduced, and the optimizer step (Rajbhandari et al. 2020, ZeRO):
//  - stage 0: every rank keeps everything (2+2+12 bytes per parameter in mixed precision); each
//    bucket's gradients are all-reduced after the last micro-batch's backward.
//  - stage 1: optimizer states sharded (4 + 12/N): reduce-scatter the gradients into this rank's
//    shard, update the shard, all-gather the parameters.
//  - stage 2: gradients sharded too (2 + 14/N): every micro-batch's bucket gradient is
//    reduce-scattered and accumulated into the shard, then freed.
//  - stage 3: parameters sharded too (16/N): each bucket is all-gathered before its first use in a
//    forward or backward pass (the next bucket is prefetched) and freed after its last use.
// With one data-parallel rank every stage is stage 0. Optimizer offload keeps the fp32 master,
// Adam moments on the host: gradients go down over PCIe, Adam runs on the CPU, parameters come
// back up (Colossal-AI HybridAdam / ZeRO-Offload).
#include "shared/step_state.h"

namespace tandem {
namespace {

int zero_stage(const StepState& st) { return st.grid.dp() > 1 ? st.sc.strategy.zero_stage : 0; }
bool offload_optimizer(const StepState& st) {
  return st.sc.strategy.offload == Offload::kOptimizer;
}

std::string bname(int k, const char* what) {
  std::string s("B");
  s.append(std::to_string(k)).append(".").append(what);
  return s;
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// Views of every tensor of a unit inside a bucket-sized buffer, and the fused ones kernels use.
UnitViews make_views(StepState& st, const ParamUnit& u, BufferId whole, int64_t unit_offset, bool params) {
  UnitViews v;
  const int e = dtype_bytes(st.d.dtype);
  const DType dt = st.d.dtype;
  int64_t off = unit_offset;
  BufferId first_qkv = kNoId, first_fc1 = kNoId;
  int64_t qkv_off = 0, fc1_off = 0, qkv_len = 0, fc1_len = 0;
  for (const ParamTensor& t : u.tensors) {
    BufferId id = st.b.view(whole, off * e, t.elements() * e, dt, params ? t.name : t.name + ".grad");
    if (params) st.b.set_slice(id, t.slice);
    const std::string& n = t.name;
    if (ends_with(n, "ln1.weight") || ends_with(n, "final_norm.weight")) v.ln1_w = id;
    else if (ends_with(n, "ln1.bias") || ends_with(n, "final_norm.bias")) v.ln1_b = id;
    else if (ends_with(n, "ln2.weight")) v.ln2_w = id;
    else if (ends_with(n, "ln2.bias")) v.ln2_b = id;
    else if (ends_with(n, "attn.o.weight")) v.o = id;
    else if (ends_with(n, "mlp.fc2.weight")) v.fc2 = id;
    else if (ends_with(n, "embedding.weight") || ends_with(n, "lm_head.weight")) v.table = id;
    if (ends_with(n, "attn.q.weight")) first_qkv = id, qkv_off = off;
    if (ends_with(n, "attn.q.weight") || ends_with(n, "attn.k.weight") || ends_with(n, "attn.v.weight"))
      qkv_len += t.elements();
    if (ends_with(n, "mlp.fc1.weight") || ends_with(n, "mlp.gate.weight")) first_fc1 = id, fc1_off = off;
    if (ends_with(n, "mlp.fc1.weight") || ends_with(n, "mlp.gate.weight") || ends_with(n, "mlp.up.weight"))
      fc1_len += t.elements();
    off += t.elements();
  }
  const char* suffix = params ? "" : ".grad";
  std::string layer("layer");
  layer.append(std::to_string(u.layer));
  if (first_qkv != kNoId) v.qkv = st.b.view(whole, qkv_off * e, qkv_len * e, dt, layer + ".attn.qkv" + suffix);
  if (first_fc1 != kNoId) v.fc1 = st.b.view(whole, fc1_off * e, fc1_len * e, dt, layer + ".mlp.fc1_fused" + suffix);
  if (u.norm_elements > 0)
    v.norm = st.b.view(whole, unit_offset * e, u.norm_elements * e, dt, layer + ".norms" + suffix);
  return v;
}

void dp_collective(StepState& st, CollectiveOp op, BufferId in, BufferId out, int64_t bytes, Phase ph, GroupId g) {
  Collective c;
  c.op = op;
  c.group = g;
  c.bytes = bytes;
  c.dtype = st.d.dtype;
  c.phase = ph;
  c.buffers = {in, out};
  st.b.collective(std::move(c), Stream::kGradComm);
}

// The buckets whose parameters or gradients a unit touches: its own, and the embedding's for a
// head that shares the embedding table.
std::vector<int> touched_buckets(const StepState& st, int unit) {
  std::vector<int> k = {st.lay.bucket_of_unit[unit]};
  if (st.lay.units[unit].shares_embedding) k.push_back(st.lay.bucket_of_unit.front());
  return k;
}

void gather_bucket(StepState& st, int k) {
  BucketBuffers& bb = st.buckets[k];
  if (bb.gathered) return;
  const TaskId throttle = st.b.last_on(Stream::kCompute);  // prefetch at most one bucket ahead
  if (throttle == kNoId) st.b.alloc(bb.param, Stream::kGradComm);
  else st.b.alloc(bb.param, Stream::kGradComm, {throttle});
  dp_collective(st, CollectiveOp::kAllGather, bb.param_shard, bb.param, st.b.buffer_at(bb.param).bytes,
                Phase::kForward, st.gids.dp(st.coord));
  bb.gathered = true;
}

}  // namespace

void emit_persistent_state(StepState& st) {
  const int zero = zero_stage(st);
  const int e = dtype_bytes(st.d.dtype);
  const int r = st.coord.dp;
  const bool off = offload_optimizer(st);
  const Placement opt_place = off ? Placement::kHost : Placement::kDevice;
  st.pv.assign(st.lay.units.size(), {});
  st.gv.assign(st.lay.units.size(), {});
  st.buckets.assign(st.lay.buckets.size(), {});
  for (size_t k = 0; k < st.lay.buckets.size(); ++k) {
    const GradBucket& gb = st.lay.buckets[k];
    BucketBuffers& bb = st.buckets[k];
    const int64_t E = gb.elements, S = gb.shard_elements;
    bb.param = st.b.buffer(bname(k, "params"), E * e, st.d.dtype, BufferRole::kParam);
    if (zero < 3) {
      st.b.alloc(bb.param, Stream::kCompute);
      if (zero >= 1) bb.param_shard = st.b.view(bb.param, r * S * e, S * e, st.d.dtype, bname(k, "param_shard"));
    } else {
      bb.param_shard = st.b.buffer(bname(k, "param_shard"), S * e, st.d.dtype, BufferRole::kParam);
      st.b.set_shard(bb.param_shard, bb.param, r * S * e);
      st.b.alloc(bb.param_shard, Stream::kCompute);
    }
    bb.grad = st.b.buffer(bname(k, "grads"), E * e, st.d.dtype, BufferRole::kGrad);
    if (zero < 2) {
      st.b.alloc(bb.grad, Stream::kCompute);
      if (zero == 1) bb.grad_shard = st.b.view(bb.grad, r * S * e, S * e, st.d.dtype, bname(k, "grad_shard"));
    } else {
      bb.grad_shard = st.b.buffer(bname(k, "grad_shard"), S * e, st.d.dtype, BufferRole::kGrad);
      st.b.alloc(bb.grad_shard, Stream::kCompute);
    }
    const int64_t n = zero >= 1 ? S : E;
    if (st.d.dtype != DType::kFp32 || off) {
      bb.master = st.b.buffer(bname(k, "master"), n * 4, DType::kFp32, BufferRole::kOptimizer, opt_place);
      st.b.alloc(bb.master, Stream::kCompute);
    }
    bb.m = st.b.buffer(bname(k, "adam_m"), n * 4, DType::kFp32, BufferRole::kOptimizer, opt_place);
    bb.v = st.b.buffer(bname(k, "adam_v"), n * 4, DType::kFp32, BufferRole::kOptimizer, opt_place);
    st.b.alloc(bb.m, Stream::kCompute);
    st.b.alloc(bb.v, Stream::kCompute);
    for (size_t i = 0; i < gb.units.size(); ++i) {
      const int u = gb.units[i];
      st.pv[u] = make_views(st, st.lay.units[u], bb.param, gb.unit_offsets[i], true);
      st.gv[u] = make_views(st, st.lay.units[u], bb.grad, gb.unit_offsets[i], false);
    }
  }
  for (size_t u = 0; u < st.lay.units.size(); ++u)
    if (st.lay.units[u].shares_embedding) {
      st.pv[u].table = st.pv.front().table;
      st.gv[u].table = st.gv.front().table;
    }
  if (st.lay.units.back().kind == ParamUnit::Kind::kHead) st.loss = st.make("loss", -1, -1, 1, DType::kFp32);
}

void emit_param_gathers(StepState& st) {
  const int zero = zero_stage(st);
  if ((zero != 1 && zero != 2) || !st.sc.strategy.overlap_param_gather) return;
  // The shards the previous iteration's optimizer updated, gathered in the order the forward
  // first uses them (buckets are in backward order). On the first iteration the shards hold the
  // initial values every rank already has, so the losses are those of the gather-after-step order.
  const int e = dtype_bytes(st.d.dtype);
  for (size_t k = st.buckets.size(); k-- > 0;)
    dp_collective(st, CollectiveOp::kAllGather, st.buckets[k].param_shard, st.buckets[k].param,
                  st.lay.buckets[k].elements * e, Phase::kForward, st.gids.dp(st.coord));
}

void ensure_params(StepState& st, int unit, bool forward) {
  if (zero_stage(st) < 3) return;
  const int k = st.lay.bucket_of_unit[unit];
  for (int t : touched_buckets(st, unit)) gather_bucket(st, t);
  const int next = forward ? k - 1 : k + 1;
  if (next >= 0 && next < static_cast<int>(st.buckets.size()) &&
      st.lay.buckets[next].chunk == st.lay.buckets[k].chunk)
    gather_bucket(st, next);
}

void release_params_after(StepState& st, int unit, bool forward) {
  if (zero_stage(st) < 3) return;
  const int k = st.lay.bucket_of_unit[unit];
  const GradBucket& gb = st.lay.buckets[k];
  const int last = forward ? gb.units.front() : gb.units.back();
  if (unit == last && st.buckets[k].gathered) {
    st.release(st.buckets[k].param);
    st.buckets[k].gathered = false;
  }
  // A head sharing the embedding table: in the forward the table was gathered again for it.
  const int e = st.lay.bucket_of_unit.front();
  if (forward && st.lay.units[unit].shares_embedding && st.buckets[e].gathered) {
    st.release(st.buckets[e].param);
    st.buckets[e].gathered = false;
  }
}

void ensure_grads(StepState& st, int unit) {
  if (zero_stage(st) < 2) return;
  for (int k : touched_buckets(st, unit)) {
    BucketBuffers& bb = st.buckets[k];
    if (bb.grad_live) continue;
    st.b.alloc(bb.grad, Stream::kCompute);
    bb.grad_live = true;
  }
}

namespace {

// Reduce bucket k's gradients over the data-parallel group (and the tied-table and Megatron-SP
// norm all-reduces that must come first). mb: the micro-batch just finished, -1 at the end.
void sync_bucket(StepState& st, int k, int mb) {
  const GradBucket& gb = st.lay.buckets[k];
  const int zero = zero_stage(st);
  BucketBuffers& bb = st.buckets[k];
  const int e = dtype_bytes(st.d.dtype);
  // Megatron-SP: each tensor rank saw a sequence shard, so the replicated norms' gradients are
  // partial sums.
  if (st.d.seq_parallel)
    for (int u : gb.units)
      if (st.gv[u].norm != kNoId)
        st.tp_collective(CollectiveOp::kAllReduce, st.gv[u].norm, st.gv[u].norm, st.b.buffer_at(st.gv[u].norm).bytes,
                         Phase::kBackward, st.lay.units[u].layer, -1, ReduceOp::kSum, st.d.dtype);
  // Tied embeddings across pipeline stages: the first stage's table and the last stage's copy
  // must see the same gradient.
  const GroupId emb = st.gids.embedding(st.coord);
  if (emb != kNoId)
    for (int u : gb.units) {
      const ParamUnit& pu = st.lay.units[u];
      const bool copy = pu.kind == ParamUnit::Kind::kEmbedding ||
                        (pu.kind == ParamUnit::Kind::kHead && !pu.shares_embedding && st.sc.model.tied_embeddings);
      if (copy) dp_collective(st, CollectiveOp::kAllReduce, st.gv[u].table, st.gv[u].table,
                              st.b.buffer_at(st.gv[u].table).bytes, Phase::kBackward, emb);
    }
  if (st.grid.dp() == 1) return;
  const GroupId dp = st.gids.dp(st.coord);
  const int64_t bytes = gb.elements * e;
  if (zero == 0) {
    dp_collective(st, CollectiveOp::kAllReduce, bb.grad, bb.grad, bytes, Phase::kBackward, dp);
  } else if (zero == 1) {
    dp_collective(st, CollectiveOp::kReduceScatter, bb.grad, bb.grad_shard, bytes, Phase::kBackward, dp);
  } else {
    BufferId part = st.b.buffer(st.name("rs_out", -1, mb).append(".B").append(std::to_string(k)), gb.shard_elements * e,
                                st.d.dtype, BufferRole::kComm);
    st.b.alloc(part, Stream::kGradComm);
    dp_collective(st, CollectiveOp::kReduceScatter, bb.grad, part, bytes, Phase::kBackward, dp);
    st.kernel(Kernel::kAccumulate, Phase::kBackward, -1, mb, {gb.shard_elements}, {part}, {bb.grad_shard}, 0,
              st.d.dtype);
    st.release(part);
    st.release(bb.grad);
    bb.grad_live = false;
  }
}

}  // namespace

void after_unit_backward(StepState& st, int unit, int mb) {
  const int k = st.lay.bucket_of_unit[unit];
  const GradBucket& gb = st.lay.buckets[k];
  if (unit != gb.units.back() || gb.deferred) return;
  if (zero_stage(st) < 2 && mb != st.micro_batches - 1) return;
  sync_bucket(st, k, mb);
}

void emit_optimizer(StepState& st) {
  for (size_t k = 0; k < st.buckets.size(); ++k)
    if (st.lay.buckets[k].deferred) sync_bucket(st, static_cast<int>(k), -1);
  const int zero = zero_stage(st);
  const int e = dtype_bytes(st.d.dtype);
  const bool off = offload_optimizer(st);
  for (size_t k = 0; k < st.buckets.size(); ++k) {
    BucketBuffers& bb = st.buckets[k];
    const GradBucket& gb = st.lay.buckets[k];
    const int64_t n = zero >= 1 ? gb.shard_elements : gb.elements;
    BufferId grad = zero == 0 ? bb.grad : bb.grad_shard;
    BufferId param = zero == 0 ? bb.param : bb.param_shard;
    if (!off) {
      BufferId master = bb.master != kNoId ? bb.master : param;
      st.kernel(Kernel::kAdam, Phase::kOptimizer, -1, -1, {n}, {grad}, {master, bb.m, bb.v, param}, 0, st.d.dtype);
    } else {
      // Gradients down, Adam on the CPU over the fp32 master, parameters back up.
      BufferId hgrad = st.b.buffer(bname(k, "host_grad"), n * e, st.d.dtype, BufferRole::kGrad, Placement::kHost);
      BufferId hparam = st.b.buffer(bname(k, "host_param"), n * e, st.d.dtype, BufferRole::kParam, Placement::kHost);
      st.b.alloc(hgrad, Stream::kD2H);
      st.b.copy(CopyDirection::kD2H, grad, hgrad, Stream::kD2H);
      st.b.alloc(hparam, Stream::kHost);
      Compute c;
      c.kernel = Kernel::kAdam;
      c.dtype = st.d.dtype;
      c.phase = Phase::kOptimizer;
      c.dims = {n};
      c.inputs = {hgrad};
      c.outputs = {bb.master, bb.m, bb.v, hparam};
      st.b.compute(std::move(c), {}, Stream::kHost);
      st.b.free(hgrad, Stream::kHost);
      st.b.copy(CopyDirection::kH2D, hparam, param, Stream::kH2D);
      st.b.free(hparam, Stream::kH2D);
    }
    if ((zero == 1 || zero == 2) && !st.sc.strategy.overlap_param_gather)
      dp_collective(st, CollectiveOp::kAllGather, bb.param_shard, bb.param, gb.elements * e, Phase::kOptimizer,
                    st.gids.dp(st.coord));
    st.release(zero < 2 ? bb.grad : bb.grad_shard);
  }
  if (st.loss != kNoId) {
    if (st.grid.dp() > 1) {
      Collective c;
      c.op = CollectiveOp::kAllReduce;
      c.group = st.gids.dp(st.coord);
      c.bytes = 4;
      c.dtype = DType::kFp32;
      c.phase = Phase::kOptimizer;
      c.buffers = {st.loss, st.loss};
      st.b.collective(std::move(c), Stream::kGradComm);
    }
    st.release(st.loss);
  }
}

}  // namespace tandem
