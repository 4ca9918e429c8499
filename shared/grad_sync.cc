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

int zero_stage(const StepState& st) { return st.grid.dp() > 1 ? st.scenario.strategy.zero_stage : 0; }
bool offload_optimizer(const StepState& st) {
  return st.scenario.strategy.offload == Offload::kOptimizer;
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
  const int e = dtype_bytes(st.dims.dtype);
  const DType dt = st.dims.dtype;
  int64_t off = unit_offset;
  BufferId first_qkv = kNoId, first_fc1 = kNoId;
  int64_t qkv_off = 0, fc1_off = 0, qkv_len = 0, fc1_len = 0;
  for (const ParamTensor& t : u.tensors) {
    BufferId id = st.program.view(whole, off * e, t.elements() * e, dt, params ? t.name : t.name + ".grad");
    if (params) st.program.set_slice(id, t.slice);
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
  if (first_qkv != kNoId) v.qkv = st.program.view(whole, qkv_off * e, qkv_len * e, dt, layer + ".attn.qkv" + suffix);
  if (first_fc1 != kNoId) v.fc1 = st.program.view(whole, fc1_off * e, fc1_len * e, dt, layer + ".mlp.fc1_fused" + suffix);
  if (u.norm_elements > 0)
    v.norm = st.program.view(whole, unit_offset * e, u.norm_elements * e, dt, layer + ".norms" + suffix);
  return v;
}

void dp_collective(StepState& st, CollectiveOp op, BufferId in, BufferId out, int64_t bytes, Phase ph, GroupId g) {
  Collective c;
  c.op = op;
  c.group = g;
  c.bytes = bytes;
  c.dtype = st.dims.dtype;
  c.phase = ph;
  c.buffers = {in, out};
  st.program.collective(std::move(c), Stream::kGradComm);
}

// The buckets whose parameters or gradients a unit touches: its own, and the embedding's for a
// head that shares the embedding table.
std::vector<int> touched_buckets(const StepState& st, int unit) {
  std::vector<int> k = {st.layout.bucket_of_unit[unit]};
  if (st.layout.units[unit].shares_embedding) k.push_back(st.layout.bucket_of_unit.front());
  return k;
}

void gather_bucket(StepState& st, int k) {
  BucketBuffers& bb = st.bucket(k);
  if (bb.gathered) return;
  const TaskId throttle = st.program.last_on(Stream::kCompute);  // prefetch at most one bucket ahead
  if (throttle == kNoId) st.program.alloc(bb.param, Stream::kGradComm);
  else st.program.alloc(bb.param, Stream::kGradComm, {throttle});
  dp_collective(st, CollectiveOp::kAllGather, bb.param_shard, bb.param, st.program.buffer_at(bb.param).bytes,
                Phase::kForward, st.groups.dp(st.coord));
  bb.gathered = true;
}

}  // namespace

void emit_persistent_state(StepState& st) {
  const int zero = zero_stage(st);
  const int e = dtype_bytes(st.dims.dtype);
  const int r = st.coord.dp;
  const bool off = offload_optimizer(st);
  const Placement opt_place = off ? Placement::kHost : Placement::kDevice;
  for (size_t k = 0; k < st.layout.buckets.size(); ++k) {
    const GradBucket& gb = st.layout.buckets[k];
    BucketBuffers bb;
    const int64_t E = gb.elements, S = gb.shard_elements;
    bb.param = st.program.buffer(bname(k, "params"), E * e, st.dims.dtype, BufferRole::kParam);
    if (zero < 3) {
      st.program.alloc(bb.param, Stream::kCompute);
      if (zero >= 1) bb.param_shard = st.program.view(bb.param, r * S * e, S * e, st.dims.dtype, bname(k, "param_shard"));
    } else {
      bb.param_shard = st.program.buffer(bname(k, "param_shard"), S * e, st.dims.dtype, BufferRole::kParam);
      st.program.set_shard(bb.param_shard, bb.param, r * S * e);
      st.program.alloc(bb.param_shard, Stream::kCompute);
    }
    bb.grad = st.program.buffer(bname(k, "grads"), E * e, st.dims.dtype, BufferRole::kGrad);
    if (zero < 2) {
      st.program.alloc(bb.grad, Stream::kCompute);
      if (zero == 1) bb.grad_shard = st.program.view(bb.grad, r * S * e, S * e, st.dims.dtype, bname(k, "grad_shard"));
    } else {
      bb.grad_shard = st.program.buffer(bname(k, "grad_shard"), S * e, st.dims.dtype, BufferRole::kGrad);
      st.program.alloc(bb.grad_shard, Stream::kCompute);
    }
    const int64_t n = zero >= 1 ? S : E;
    if (st.dims.dtype != DType::kFp32 || off) {
      bb.master = st.program.buffer(bname(k, "master"), n * 4, DType::kFp32, BufferRole::kOptimizer, opt_place);
      st.program.alloc(bb.master, Stream::kCompute);
    }
    bb.m = st.program.buffer(bname(k, "adam_m"), n * 4, DType::kFp32, BufferRole::kOptimizer, opt_place);
    bb.v = st.program.buffer(bname(k, "adam_v"), n * 4, DType::kFp32, BufferRole::kOptimizer, opt_place);
    st.program.alloc(bb.m, Stream::kCompute);
    st.program.alloc(bb.v, Stream::kCompute);
    for (size_t i = 0; i < gb.units.size(); ++i) {
      const int u = gb.units[i];
      const UnitViews params = make_views(st, st.layout.units[u], bb.param, gb.unit_offsets[i], true);
      const UnitViews grads = make_views(st, st.layout.units[u], bb.grad, gb.unit_offsets[i], false);
      st.set_unit_views(u, params, grads);
    }
    st.add_bucket(bb);
  }
  for (size_t u = 0; u < st.layout.units.size(); ++u)
    if (st.layout.units[u].shares_embedding) {
      UnitViews params = st.params(u), grads = st.grads(u);
      params.table = st.params(0).table;
      grads.table = st.grads(0).table;
      st.set_unit_views(u, params, grads);
    }
  if (st.holds_head()) st.allocate_loss();
}

void emit_param_gathers(StepState& st) {
  const int zero = zero_stage(st);
  if ((zero != 1 && zero != 2) || !st.scenario.strategy.overlap_param_gather) return;
  // The shards the previous iteration's optimizer updated, gathered in the order the forward
  // first uses them (buckets are in backward order). On the first iteration the shards hold the
  // initial values every rank already has, so the losses are those of the gather-after-step order.
  const int e = dtype_bytes(st.dims.dtype);
  for (int k = st.bucket_count(); k-- > 0;)
    dp_collective(st, CollectiveOp::kAllGather, st.bucket(k).param_shard, st.bucket(k).param,
                  st.layout.buckets[k].elements * e, Phase::kForward, st.groups.dp(st.coord));
}

void ensure_params(StepState& st, int unit, bool forward) {
  if (zero_stage(st) < 3) return;
  const int k = st.layout.bucket_of_unit[unit];
  for (int t : touched_buckets(st, unit)) gather_bucket(st, t);
  const int next = forward ? k - 1 : k + 1;
  if (next >= 0 && next < st.bucket_count() &&
      st.layout.buckets[next].chunk == st.layout.buckets[k].chunk)
    gather_bucket(st, next);
}

void release_params_after(StepState& st, int unit, bool forward) {
  if (zero_stage(st) < 3) return;
  const int k = st.layout.bucket_of_unit[unit];
  const GradBucket& gb = st.layout.buckets[k];
  const int last = forward ? gb.units.front() : gb.units.back();
  if (unit == last && st.bucket(k).gathered) {
    st.release(st.bucket(k).param);
    st.bucket(k).gathered = false;
  }
  // A head sharing the embedding table: in the forward the table was gathered again for it.
  const int e = st.layout.bucket_of_unit.front();
  if (forward && st.layout.units[unit].shares_embedding && st.bucket(e).gathered) {
    st.release(st.bucket(e).param);
    st.bucket(e).gathered = false;
  }
}

void ensure_grads(StepState& st, int unit) {
  if (zero_stage(st) < 2) return;
  for (int k : touched_buckets(st, unit)) {
    BucketBuffers& bb = st.bucket(k);
    if (bb.grad_live) continue;
    st.program.alloc(bb.grad, Stream::kCompute);
    bb.grad_live = true;
  }
}

namespace {

// Reduce bucket k's gradients over the data-parallel group (and the tied-table and Megatron-SP
// norm all-reduces that must come first). mb: the micro-batch just finished, -1 at the end.
void sync_bucket(StepState& st, int k, int mb) {
  const GradBucket& gb = st.layout.buckets[k];
  const int zero = zero_stage(st);
  BucketBuffers& bb = st.bucket(k);
  const int e = dtype_bytes(st.dims.dtype);
  // Megatron-SP: each tensor rank saw a sequence shard, so the replicated norms' gradients are
  // partial sums.
  if (st.dims.seq_parallel)
    for (int u : gb.units)
      if (st.grads(u).norm != kNoId)
        st.tp_collective(CollectiveOp::kAllReduce, st.grads(u).norm, st.grads(u).norm, st.program.buffer_at(st.grads(u).norm).bytes,
                         Phase::kBackward, st.layout.units[u].layer, -1, ReduceOp::kSum, st.dims.dtype);
  // Tied embeddings across pipeline stages: the first stage's table and the last stage's copy
  // must see the same gradient.
  const GroupId emb = st.groups.embedding(st.coord);
  if (emb != kNoId)
    for (int u : gb.units) {
      const ParamUnit& pu = st.layout.units[u];
      const bool copy = pu.kind == ParamUnit::Kind::kEmbedding ||
                        (pu.kind == ParamUnit::Kind::kHead && !pu.shares_embedding && st.scenario.model.tied_embeddings);
      if (copy) dp_collective(st, CollectiveOp::kAllReduce, st.grads(u).table, st.grads(u).table,
                              st.program.buffer_at(st.grads(u).table).bytes, Phase::kBackward, emb);
    }
  if (st.grid.dp() == 1) return;
  const GroupId dp = st.groups.dp(st.coord);
  const int64_t bytes = gb.elements * e;
  if (zero == 0) {
    dp_collective(st, CollectiveOp::kAllReduce, bb.grad, bb.grad, bytes, Phase::kBackward, dp);
  } else if (zero == 1) {
    dp_collective(st, CollectiveOp::kReduceScatter, bb.grad, bb.grad_shard, bytes, Phase::kBackward, dp);
  } else {
    BufferId part = st.program.buffer(st.buffer_name("rs_out", -1, mb).append(".B").append(std::to_string(k)), gb.shard_elements * e,
                                st.dims.dtype, BufferRole::kComm);
    st.program.alloc(part, Stream::kGradComm);
    dp_collective(st, CollectiveOp::kReduceScatter, bb.grad, part, bytes, Phase::kBackward, dp);
    st.kernel(Kernel::kAccumulate, Phase::kBackward, -1, mb, {gb.shard_elements}, {part}, {bb.grad_shard}, 0,
              st.dims.dtype);
    st.release(part);
    st.release(bb.grad);
    bb.grad_live = false;
  }
}

}  // namespace

void after_unit_backward(StepState& st, int unit, int mb) {
  const int k = st.layout.bucket_of_unit[unit];
  const GradBucket& gb = st.layout.buckets[k];
  if (unit != gb.units.back() || gb.deferred) return;
  if (zero_stage(st) < 2 && mb != st.micro_batches - 1) return;
  sync_bucket(st, k, mb);
}

void emit_optimizer(StepState& st) {
  for (int k = 0; k < st.bucket_count(); ++k)
    if (st.layout.buckets[k].deferred) sync_bucket(st, k, -1);
  const int zero = zero_stage(st);
  const int e = dtype_bytes(st.dims.dtype);
  const bool off = offload_optimizer(st);
  for (int k = 0; k < st.bucket_count(); ++k) {
    BucketBuffers& bb = st.bucket(k);
    const GradBucket& gb = st.layout.buckets[k];
    const int64_t n = zero >= 1 ? gb.shard_elements : gb.elements;
    BufferId grad = zero == 0 ? bb.grad : bb.grad_shard;
    BufferId param = zero == 0 ? bb.param : bb.param_shard;
    if (!off) {
      BufferId master = bb.master != kNoId ? bb.master : param;
      st.kernel(Kernel::kAdam, Phase::kOptimizer, -1, -1, {n}, {grad}, {master, bb.m, bb.v, param}, 0, st.dims.dtype);
    } else {
      // Gradients down, Adam on the CPU over the fp32 master, parameters back up.
      BufferId hgrad = st.program.buffer(bname(k, "host_grad"), n * e, st.dims.dtype, BufferRole::kGrad, Placement::kHost);
      BufferId hparam = st.program.buffer(bname(k, "host_param"), n * e, st.dims.dtype, BufferRole::kParam, Placement::kHost);
      st.program.alloc(hgrad, Stream::kD2H);
      st.program.copy(CopyDirection::kD2H, grad, hgrad, Stream::kD2H);
      st.program.alloc(hparam, Stream::kHost);
      Compute c;
      c.kernel = Kernel::kAdam;
      c.dtype = st.dims.dtype;
      c.phase = Phase::kOptimizer;
      c.dims = {n};
      c.inputs = {hgrad};
      c.outputs = {bb.master, bb.m, bb.v, hparam};
      st.program.compute(std::move(c), {}, Stream::kHost);
      st.program.free(hgrad, Stream::kHost);
      st.program.copy(CopyDirection::kH2D, hparam, param, Stream::kH2D);
      st.program.free(hparam, Stream::kH2D);
    }
    if ((zero == 1 || zero == 2) && !st.scenario.strategy.overlap_param_gather)
      dp_collective(st, CollectiveOp::kAllGather, bb.param_shard, bb.param, gb.elements * e, Phase::kOptimizer,
                    st.groups.dp(st.coord));
    st.release(zero < 2 ? bb.grad : bb.grad_shard);
  }
  if (st.loss() != kNoId) {
    if (st.grid.dp() > 1) {
      Collective c;
      c.op = CollectiveOp::kAllReduce;
      c.group = st.groups.dp(st.coord);
      c.bytes = 4;
      c.dtype = DType::kFp32;
      c.phase = Phase::kOptimizer;
      c.buffers = {st.loss(), st.loss()};
      st.program.collective(std::move(c), Stream::kGradComm);
    }
    st.release(st.loss());
  }
}

}  // namespace tandem
