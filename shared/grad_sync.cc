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
// The software part (docs/software.md) decides the rest: the gradient buffers' dtype
// (grad_reduce_dtype: fp32 main_grad or the training dtype), whether stage 0/1 buckets are reduced
// during the backward or after it (grad_reduce_overlap), and the optimizer's bookkeeping: the
// found-inf all-reduce (max) of fp16 loss scaling and the gradient-norm all-reduce (sum) of
// clipping, each a 4-byte fp32 all-reduce over the tensor group, then the pipeline group, then the
// data-parallel group when the optimizer is sharded (an all-reduce over the model-parallel group,
// as Megatron issues it, written as its factors), before Adam; the passes over the gradients and
// weights that go with them are in the Adam task's bytes (shared/optimizer_bytes.h).
// With the sequence split over the sp axis the data-parallel group is the data-and-sequence group
// (shared/sequence_split.h), and the loss is summed over it too.
#include "shared/optimizer_bytes.h"
#include "shared/sequence_split.h"
#include "shared/step_state.h"
#include "shared/tp2d.h"
#include "shared/tp3d.h"

namespace tandem {
namespace {

int zero_stage(const StepState& st) { return grad_group_size(st) > 1 ? st.scenario.strategy.zero_stage : 0; }
bool offload_optimizer(const StepState& st) {
  return st.scenario.strategy.offload == Offload::kOptimizer;
}
// Bucket k's optimizer states on the host with Adam there: every bucket under offload optimizer,
// every Gemini chunk under offload auto (GradBucket::host_optimizer).
bool host_adam(const StepState& st, int k) {
  return offload_optimizer(st) || st.layout.buckets[k].host_optimizer;
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
  const DType dt = params ? st.dims.dtype : st.scenario.grad_dtype();
  const int e = dtype_bytes(dt);
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

void dp_collective(StepState& st, CollectiveOp op, BufferId in, BufferId out, int64_t bytes, Phase ph, GroupId g,
                   TaskId after = kNoId) {
  Collective c;
  c.op = op;
  c.group = g;
  c.bytes = bytes;
  c.dtype = st.program.buffer_at(in).dtype;
  c.phase = ph;
  c.buffers = {in, out};
  st.program.collective(std::move(c), Stream::kGradComm, {after});
}

// The buckets whose parameters or gradients a unit touches: its own, and the embedding's for a
// head that shares the embedding table.
std::vector<int> touched_buckets(const StepState& st, int unit) {
  std::vector<int> k = {st.layout.bucket_of_unit[unit]};
  if (st.layout.units[unit].shares_embedding) k.push_back(st.layout.bucket_of_unit.front());
  return k;
}

// Buckets gathered before use and freed after: every one under ZeRO-3, and the chunks on the host
// (offload params: shared/offload_emitter.cc).
bool gathers(const StepState& st, int k) { return zero_stage(st) == 3 || st.layout.buckets[k].on_host; }
bool any_gathered(const StepState& st) {
  if (zero_stage(st) == 3) return true;
  for (const GradBucket& b : st.layout.buckets)
    if (b.on_host) return true;
  return false;
}

void gather_bucket(StepState& st, int k) {
  BucketBuffers& bb = st.bucket(k);
  if (bb.gathered || !gathers(st, k)) return;
  const TaskId throttle = st.program.last_on(Stream::kCompute);  // prefetch at most one bucket ahead
  if (st.layout.buckets[k].on_host) {
    gather_host_chunk(st, k, throttle);
    bb.gathered = true;
    return;
  }
  if (throttle == kNoId) st.program.alloc(bb.param, Stream::kGradComm);
  else st.program.alloc(bb.param, Stream::kGradComm, {throttle});
  dp_collective(st, CollectiveOp::kAllGather, bb.param_shard, bb.param, st.program.buffer_at(bb.param).bytes,
                Phase::kForward, grad_group(st));
  bb.gathered = true;
}

}  // namespace

void emit_persistent_state(StepState& st) {
  const int zero = zero_stage(st);
  const int e = dtype_bytes(st.dims.dtype);
  const int r = grad_group_index(st);
  for (size_t k = 0; k < st.layout.buckets.size(); ++k) {
    const GradBucket& gb = st.layout.buckets[k];
    const bool off = host_adam(st, int(k));
    const Placement opt_place = off ? Placement::kHost : Placement::kDevice;
    BucketBuffers bb;
    const int64_t E = gb.elements, S = gb.shard_elements;
    bb.param = st.program.buffer(bname(k, "params"), E * e, st.dims.dtype, BufferRole::kParam);
    if (gb.on_host && zero < 3) {
      bb.host_param = st.program.buffer(bname(k, "host_params"), E * e, st.dims.dtype, BufferRole::kParam, Placement::kHost);
      st.program.set_shard(bb.host_param, bb.param, 0);
      st.program.alloc(bb.host_param, Stream::kCompute);
    } else if (zero < 3) {
      st.program.alloc(bb.param, Stream::kCompute);
      if (zero >= 1) bb.param_shard = st.program.view(bb.param, r * S * e, S * e, st.dims.dtype, bname(k, "param_shard"));
    } else {
      bb.param_shard = st.program.buffer(bname(k, "param_shard"), S * e, st.dims.dtype, BufferRole::kParam,
                                         gb.on_host ? Placement::kHost : Placement::kDevice);
      st.program.set_shard(bb.param_shard, bb.param, r * S * e);
      st.program.alloc(bb.param_shard, Stream::kCompute);
      if (gb.on_host) bb.host_param = bb.param_shard;
    }
    const DType gt = st.scenario.grad_dtype();
    const int g = dtype_bytes(gt);
    bb.grad = st.program.buffer(bname(k, "grads"), E * g, gt, BufferRole::kGrad);
    if (gb.host_optimizer) {
      // offload auto: the whole gradient lives on the device only while the chunk's backward
      // runs (allocated per micro-batch, as under ZeRO-2/3); its reduced shard accumulates on the
      // host (grads_to_host).
      bb.grad_shard = st.program.buffer(bname(k, "grad_shard"), S * g, gt, BufferRole::kGrad, Placement::kHost);
      st.program.alloc(bb.grad_shard, Stream::kCompute);
    } else if (zero < 2) {
      st.program.alloc(bb.grad, Stream::kCompute);
      if (zero == 1) bb.grad_shard = st.program.view(bb.grad, r * S * g, S * g, gt, bname(k, "grad_shard"));
    } else {
      bb.grad_shard = st.program.buffer(bname(k, "grad_shard"), S * g, gt, BufferRole::kGrad);
      st.program.alloc(bb.grad_shard, Stream::kCompute);
    }
    const int64_t n = zero >= 1 ? S : E;
    const Placement place = gb.on_host ? Placement::kHost : opt_place;
    // What the optimizer keeps beside the parameters (software.master_params; offload is refused
    // unless fp32): an fp32 master, the 16-bit remainders of one (Apex store_param_remainders: an
    // int16 shard, planned as a 2-byte buffer), or nothing (Adam updates the parameters). fp32
    // with Adam on the host: the host needs its own fp32 copy unless the parameters live there.
    const MasterParams mp = st.scenario.master_params();
    if (mp == MasterParams::kFp32 || (off && st.dims.dtype == DType::kFp32 && !gb.on_host)) {
      bb.master = st.program.buffer(bname(k, "master"), n * 4, DType::kFp32, BufferRole::kOptimizer, place);
      st.program.alloc(bb.master, Stream::kCompute);
    } else if (mp == MasterParams::kRemainder) {
      bb.master = st.program.buffer(bname(k, "master_remainder"), n * 2, DType::kBf16, BufferRole::kOptimizer, place);
      st.program.alloc(bb.master, Stream::kCompute);
    }
    // Adam's moments in software.optimizer_state_dtype (fp32, or the parameters' dtype).
    const DType sd = st.scenario.optimizer_state_dtype();
    const int s = dtype_bytes(sd);
    bb.m = st.program.buffer(bname(k, "adam_m"), n * s, sd, BufferRole::kOptimizer, place);
    bb.v = st.program.buffer(bname(k, "adam_v"), n * s, sd, BufferRole::kOptimizer, place);
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
  if ((zero != 1 && zero != 2) || !st.scenario.software.overlap_param_gather) return;
  // The shards the previous iteration's optimizer updated, gathered in the order the forward
  // first uses them (buckets are in backward order). On the first iteration the shards hold the
  // initial values every rank already has, so the losses are those of the gather-after-step order.
  const int e = dtype_bytes(st.dims.dtype);
  for (int k = st.bucket_count(); k-- > 0;)
    dp_collective(st, CollectiveOp::kAllGather, st.bucket(k).param_shard, st.bucket(k).param,
                  st.layout.buckets[k].elements * e, Phase::kForward, grad_group(st));
}

void ensure_params(StepState& st, int unit, bool forward) {
  const int k = st.layout.bucket_of_unit[unit];
  std::vector<int> needed = touched_buckets(st, unit);
  const int next = forward ? k - 1 : k + 1;
  if (next >= 0 && next < st.bucket_count() &&
      st.layout.buckets[next].chunk == st.layout.buckets[k].chunk)
    needed.push_back(next);
  adjust_layout(st, unit, forward, needed);  // offload auto (shared/auto_eviction.cc)
  if (!any_gathered(st)) return;
  for (int t : needed) gather_bucket(st, t);
}

namespace {

// After its last use in a pass the whole chunk is freed; under offload auto without data
// parallelism a host chunk's device copy is the whole chunk, kept until evicted.
void release_gathered(StepState& st, int k) {
  BucketBuffers& bb = st.bucket(k);
  if (!(st.auto_record != nullptr && st.layout.buckets[k].on_host && grad_group_size(st) == 1)) st.release(bb.param);
  bb.gathered = false;
}

}  // namespace

void release_params_after(StepState& st, int unit, bool forward) {
  if (!any_gathered(st)) return;
  const int k = st.layout.bucket_of_unit[unit];
  const GradBucket& gb = st.layout.buckets[k];
  const int last = forward ? gb.units.front() : gb.units.back();
  if (unit == last && st.bucket(k).gathered) release_gathered(st, k);
  // A head sharing the embedding table: in the forward the table was gathered again for it.
  const int e = st.layout.bucket_of_unit.front();
  if (forward && st.layout.units[unit].shares_embedding && st.bucket(e).gathered) release_gathered(st, e);
}

namespace {

// offload auto: frees the device buffers of all but the `keep` newest chunks in flight
// (StepState::grads_in_flight).
void free_grads_in_flight(StepState& st, size_t keep) {
  std::vector<std::vector<BufferId>>& q = st.grads_in_flight;
  const size_t n = q.size() > keep ? q.size() - keep : 0;
  // On the compute stream: each Free waits for the copy that reads its buffer (ProgramBuilder's
  // derived dependencies), and every later Alloc of the backward comes after it.
  for (size_t i = 0; i < n; ++i)
    for (BufferId b : q[i]) st.program.free(b, Stream::kCompute);
  q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace

void ensure_grads(StepState& st, int unit) {
  for (int k : touched_buckets(st, unit)) {
    if (zero_stage(st) < 2 && !st.layout.buckets[k].host_optimizer) continue;
    BucketBuffers& bb = st.bucket(k);
    if (bb.grad_live) continue;
    // offload auto: not before the gradient two chunks back has left the device (a copy stream
    // slower than the backward would otherwise pile gradients up on the device).
    if (st.layout.buckets[k].host_optimizer) free_grads_in_flight(st, 1);
    st.program.alloc(bb.grad, Stream::kCompute);
    bb.grad_live = true;
  }
}

namespace {

// offload auto, after chunk k's backward of micro-batch mb: its gradient reduce-scattered over the
// data-parallel group (when it has more than one rank) and the shard sent to the host, as Gemini
// moves every reduced gradient chunk to its gradients' device, the CPU (gemini_ddp.py:429-431 at
// 4f9953be335e). Accumulating over micro-batches, Gemini brings the shard accumulated so far back
// to the device, adds it to the new gradient and sends the sum down again
// (ChunkManager.rearrange_accumulated_grad_chunk, chunk/manager.py:282-312): so from the second
// micro-batch on, one shard up and one down. (Gemini adds before the reduce-scatter, scaled by
// the group size; adding after it is the same sum.)
void grads_to_host(StepState& st, int k, int mb) {
  const GradBucket& gb = st.layout.buckets[k];
  BucketBuffers& bb = st.bucket(k);
  const DType gt = st.scenario.grad_dtype();
  const int e = dtype_bytes(gt);
  BufferId reduced = bb.grad, part = kNoId;
  // Not before the chunk's backward has run on the compute stream (Gemini reduces in the chunk's
  // gradient hook): the comm stream would otherwise allocate ahead of the frees before it.
  const TaskId backward = st.program.last_on(Stream::kCompute);
  if (grad_group_size(st) > 1) {
    part = st.program.buffer(st.buffer_name("rs_out", -1, mb).append(".B").append(std::to_string(k)),
                             gb.shard_elements * e, gt, BufferRole::kComm);
    if (backward == kNoId) st.program.alloc(part, Stream::kGradComm);
    else st.program.alloc(part, Stream::kGradComm, {backward});
    dp_collective(st, CollectiveOp::kReduceScatter, bb.grad, part, gb.elements * e, Phase::kBackward, grad_group(st));
    reduced = part;
  }
  if (mb <= 0) {
    st.program.copy(CopyDirection::kD2H, reduced, bb.grad_shard, Stream::kD2H);
    // Freed once the copy is done, before the gradient two chunks later (free_grads_in_flight):
    // the compute stream goes on with the backward meanwhile.
    if (part != kNoId) st.grads_in_flight.push_back({part, bb.grad});
    else st.grads_in_flight.push_back({bb.grad});
    bb.grad_live = false;
    return;
  } else {
    const BufferId acc = st.program.buffer(st.buffer_name("grad_acc", -1, mb).append(".B").append(std::to_string(k)),
                                           gb.shard_elements * e, gt, BufferRole::kGrad);
    // Not before the chunk's backward has run on the compute stream (Gemini brings the shard up in
    // the gradient hook): else the copy stream would allocate every chunk's buffer at once.
    if (backward == kNoId) st.program.alloc(acc, Stream::kH2D);
    else st.program.alloc(acc, Stream::kH2D, {backward});
    st.program.copy(CopyDirection::kH2D, bb.grad_shard, acc, Stream::kH2D);
    st.kernel(Kernel::kAccumulate, Phase::kBackward, -1, mb, {gb.shard_elements}, {reduced}, {acc}, 0, gt);
    st.program.copy(CopyDirection::kD2H, acc, bb.grad_shard, Stream::kD2H);
    st.grads_in_flight.push_back({acc});
  }
  st.release(part);
  st.release(bb.grad);
  bb.grad_live = false;
}

// Reduce bucket k's gradients over the data-parallel group (and the tied-table and Megatron-SP
// norm all-reduces that must come first). mb: the micro-batch just finished, -1 at the end.
// At the end (-1) the reductions are issued after the whole backward, as the frameworks' training
// loops do once the pipeline schedule has returned: Megatron-LM's local DDP allreduce_gradients
// (megatron/training.py train_step, v2.5 e269e200 / v3.0 d898a899), Megatron-Core's
// finalize_model_grads (core_r0.8.0 baf94af3, megatron/core/distributed/finalize_model_grads.py:
// finish_grad_sync, then the embedding and Megatron-SP norm all-reduces). A NCCL call is ordered
// after every kernel already queued on the stream it is issued from, so each collective waits for
// the compute stream's last task, not only for the writers of its bucket.
void sync_bucket(StepState& st, int k, int mb) {
  const TaskId after = mb < 0 ? st.program.last_on(Stream::kCompute) : kNoId;
  const GradBucket& gb = st.layout.buckets[k];
  const int zero = zero_stage(st);
  BucketBuffers& bb = st.bucket(k);
  const DType gt = st.scenario.grad_dtype();
  const int e = dtype_bytes(gt);
  // Megatron-SP: each tensor rank saw a sequence shard, so the replicated norms' gradients are
  // partial sums.
  if (st.dims.seq_parallel)
    for (int u : gb.units)
      if (st.grads(u).norm != kNoId)
        st.tp_collective(CollectiveOp::kAllReduce, st.grads(u).norm, st.grads(u).norm, st.program.buffer_at(st.grads(u).norm).bytes,
                         Phase::kBackward, st.layout.units[u].layer, -1, ReduceOp::kSum, gt, {after});
  // 2D tensor parallelism: the norms' feature block is held alike down each column group.
  if (tp2d(st)) tp2d_reduce_replicated_grads(st, k);
  if (tp3d(st)) tp3d_reduce_replicated_grads(st, k);
  // Tied embeddings across pipeline stages: the first stage's table and the last stage's copy
  // must see the same gradient.
  const GroupId emb = st.groups.embedding(st.coord);
  if (emb != kNoId)
    for (int u : gb.units) {
      const ParamUnit& pu = st.layout.units[u];
      const bool copy = pu.kind == ParamUnit::Kind::kEmbedding ||
                        (pu.kind == ParamUnit::Kind::kHead && !pu.shares_embedding && st.scenario.model.tied_embeddings);
      if (copy) dp_collective(st, CollectiveOp::kAllReduce, st.grads(u).table, st.grads(u).table,
                              st.program.buffer_at(st.grads(u).table).bytes, Phase::kBackward, emb, after);
    }
  if (gb.host_optimizer) {
    grads_to_host(st, k, mb);
    return;
  }
  if (grad_group_size(st) == 1) return;
  const GroupId dp = grad_group(st);
  const int64_t bytes = gb.elements * e;
  if (zero == 0) {
    dp_collective(st, CollectiveOp::kAllReduce, bb.grad, bb.grad, bytes, Phase::kBackward, dp, after);
  } else if (zero == 1) {
    dp_collective(st, CollectiveOp::kReduceScatter, bb.grad, bb.grad_shard, bytes, Phase::kBackward, dp, after);
  } else {
    BufferId part = st.program.buffer(st.buffer_name("rs_out", -1, mb).append(".B").append(std::to_string(k)), gb.shard_elements * e,
                                gt, BufferRole::kComm);
    // Not before the bucket's backward has run on the compute stream (its reduce-scatter waits
    // for it anyway): allocated earlier, it would run ahead of the frees before it in program
    // order, past the planned peak (shared/memory_order.h).
    const TaskId backward = st.program.last_on(Stream::kCompute);
    if (backward == kNoId) st.program.alloc(part, Stream::kGradComm);
    else st.program.alloc(part, Stream::kGradComm, {backward});
    dp_collective(st, CollectiveOp::kReduceScatter, bb.grad, part, bytes, Phase::kBackward, dp, after);
    st.kernel(Kernel::kAccumulate, Phase::kBackward, -1, mb, {gb.shard_elements}, {part}, {bb.grad_shard}, 0, gt);
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
  if (!(zero_stage(st) < 2 && !gb.host_optimizer &&
        (mb != st.micro_batches - 1 || !st.scenario.software.grad_reduce_overlap)))
    sync_bucket(st, k, mb);
  // offload auto: the micro-batch's backward ends when its last gradients have left the device
  // (the last bucket is the first chunk, the last in the backward: offload auto has no pipeline).
  // The last chunk may keep its optimizer on the device (strategy.gpu_margin_mem_ratio) while
  // earlier ones' gradients are still in flight: they are freed here all the same.
  if (k == st.bucket_count() - 1 && !st.grads_in_flight.empty()) free_grads_in_flight(st, 0);
}

namespace {

// Buckets reduced after the whole backward: those the layout defers, and with
// software.grad_reduce_overlap off every bucket of ZeRO stages 0 and 1 (Megatron's local DDP).
bool reduced_after_backward(const StepState& st, int k) {
  const GradBucket& gb = st.layout.buckets[k];
  return gb.deferred || (zero_stage(st) < 2 && !gb.host_optimizer && !st.scenario.software.grad_reduce_overlap);
}

// A 4-byte fp32 all-reduce of a scalar over the model-parallel group (tensor, then pipeline; then
// data-parallel when the optimizer is sharded), issued after task `after`. Returns the last task
// (`after` when no group has two members).
TaskId model_parallel_scalar(StepState& st, const char* name, ReduceOp reduce, TaskId after) {
  struct Part {
    GroupId group;
    Stream stream;
  };
  std::vector<Part> parts;
  if (st.grid.tp() > 1) parts.push_back({st.groups.tp(st.coord), Stream::kComm});
  if (st.grid.pp() > 1) parts.push_back({st.groups.pp(st.coord), Stream::kComm});
  if (zero_stage(st) >= 1) parts.push_back({grad_group(st), Stream::kGradComm});
  if (parts.empty()) return after;
  const BufferId scalar = st.program.buffer(name, 4, DType::kFp32, BufferRole::kWorkspace);
  // Not before what it reduces, nor before the compute stream's frees before it in program order
  // (the plan's walk frees them first: shared/memory_order.h).
  st.program.alloc(scalar, Stream::kComm, {after, st.program.last_on(Stream::kCompute)});
  TaskId last = after;
  for (const Part& p : parts) {
    Collective c;
    c.op = CollectiveOp::kAllReduce;
    c.reduce = reduce;
    c.group = p.group;
    c.bytes = 4;
    c.dtype = DType::kFp32;
    c.phase = Phase::kOptimizer;
    c.buffers = {scalar, scalar};
    if (last == kNoId) last = st.program.collective(std::move(c), p.stream);
    else last = st.program.collective(std::move(c), p.stream, {last});
  }
  st.program.free(scalar, Stream::kComm, {last});
  return last;
}

// fp16 loss scaling's found-inf flag (max) and clipping's squared gradient norm (sum), reduced
// over the model-parallel group after every gradient reduction; returns the task Adam waits for.
TaskId optimizer_reductions(StepState& st) {
  const SoftwareSpec& sw = st.scenario.software;
  // After the last gradient reduction (which follows the backward), else after the backward.
  TaskId last = st.program.last_on(Stream::kGradComm);
  if (last == kNoId) last = st.program.last_on(Stream::kCompute);
  if (sw.loss_scale_check && st.dims.dtype == DType::kFp16)
    last = model_parallel_scalar(st, "found_inf", ReduceOp::kMax, last);
  if (sw.clip_grad > 0) last = model_parallel_scalar(st, "grad_norm_sq", ReduceOp::kSum, last);
  return last;
}

}  // namespace

void emit_optimizer(StepState& st) {
  for (int k = 0; k < st.bucket_count(); ++k)
    if (reduced_after_backward(st, k)) sync_bucket(st, k, -1);
  free_grads_in_flight(st, 0);
  free_host_chunk_staging(st);
  // offload auto: the optimizer step is the last operator; the host Adam writes the host shards.
  drop_resident_host_chunks(st);
  adjust_layout(st, -1, false, {});
  const int zero = zero_stage(st);
  const int e = dtype_bytes(st.dims.dtype);
  // Every stream that runs an Adam waits for the reductions (its step needs the found-inf flag and
  // the gradient norm): the compute stream once, before its first device Adam (`wait`); the host
  // stream before each host Adam, whose gradient copies need not wait.
  const TaskId reductions = optimizer_reductions(st);
  TaskId wait = reductions;
  const int64_t step_bytes = optimizer_bytes_per_element(st.scenario);
  const int buckets = st.bucket_count();
  auto grad_of = [&](int k) {
    return zero == 0 && !st.layout.buckets[k].host_optimizer ? st.bucket(k).grad : st.bucket(k).grad_shard;
  };
  // Adam on the host (chunks on the host, offload optimizer and auto): the gradient (shard) down
  // to a host buffer unless it is there already (auto: grads_to_host). Each shard comes down one
  // bucket ahead, while the host Adam steps the one before, and not before the host stream has
  // freed everything before it in program order (so host memory follows the plan:
  // shared/memory_order.h): at most two buckets' gradients on the host.
  std::vector<BufferId> host_grad(size_t(buckets), kNoId);
  auto download = [&](int k) {
    const GradBucket& gb = st.layout.buckets[k];
    if (host_grad[size_t(k)] != kNoId || !(gb.on_host || host_adam(st, k))) return;
    const BufferId grad = grad_of(k);
    const Buffer& g = st.program.buffer_at(grad);
    if (g.placement == Placement::kHost) {
      host_grad[size_t(k)] = grad;
      return;
    }
    const BufferId h = st.program.buffer(bname(k, "host_grad"), g.bytes, g.dtype, BufferRole::kGrad, Placement::kHost);
    const TaskId host = st.program.last_on(Stream::kHost);
    if (host == kNoId) st.program.alloc(h, Stream::kD2H);
    else st.program.alloc(h, Stream::kD2H, {host});
    // A chunk on the host under offload params steps after the optimizer's reductions.
    if (gb.on_host && reductions != kNoId) st.program.copy(CopyDirection::kD2H, grad, h, Stream::kD2H, {reductions});
    else st.program.copy(CopyDirection::kD2H, grad, h, Stream::kD2H);
    host_grad[size_t(k)] = h;
  };
  // The updated parameters of host-Adam buckets on their way up, oldest first: freed on the host
  // stream (after their copy) before the one two buckets later is written.
  std::vector<BufferId> params_in_flight;
  auto free_params_in_flight = [&](size_t keep) {
    while (params_in_flight.size() > keep) {
      st.program.free(params_in_flight.front(), Stream::kHost);
      params_in_flight.erase(params_in_flight.begin());
    }
  };
  for (int k = 0; k < buckets; ++k) {
    BucketBuffers& bb = st.bucket(k);
    const GradBucket& gb = st.layout.buckets[k];
    const int64_t n = zero >= 1 ? gb.shard_elements : gb.elements;
    const BufferId grad = grad_of(k);
    BufferId param = zero == 0 ? bb.param : bb.param_shard;
    download(k);
    if (k + 1 < buckets) download(k + 1);
    const BufferId hgrad = host_grad[size_t(k)];
    if (gb.on_host) {
      host_chunk_step(st, k, hgrad, hgrad != grad, n, reductions);
    } else if (!host_adam(st, k)) {
      BufferId master = bb.master != kNoId ? bb.master : param;
      Compute c;
      c.kernel = Kernel::kAdam;
      c.dtype = st.dims.dtype;
      c.phase = Phase::kOptimizer;
      c.dims = {n, 0, step_bytes};
      c.inputs = {grad};
      c.outputs = {master, bb.m, bb.v, param};
      if (wait == kNoId) st.program.compute(std::move(c));
      else st.program.compute(std::move(c), {wait});
      wait = kNoId;
    } else {
      // Adam on the CPU over the fp32 master, the parameters back up.
      BufferId hparam = st.program.buffer(bname(k, "host_param"), n * e, st.dims.dtype, BufferRole::kParam, Placement::kHost);
      // Not before the one two buckets back is on its way up: a copy stream slower than the host
      // Adam would otherwise pile updated parameters up in host memory.
      free_params_in_flight(1);
      st.program.alloc(hparam, Stream::kHost);
      Compute c;
      c.kernel = Kernel::kAdam;
      c.dtype = st.dims.dtype;
      c.phase = Phase::kOptimizer;
      c.dims = {n};
      c.inputs = {hgrad};
      c.outputs = {bb.master, bb.m, bb.v, hparam};
      if (reductions == kNoId) st.program.compute(std::move(c), {}, Stream::kHost);
      else st.program.compute(std::move(c), {reductions}, Stream::kHost);
      if (hgrad != grad) st.program.free(hgrad, Stream::kHost);
      st.program.copy(CopyDirection::kH2D, hparam, param, Stream::kH2D);
      params_in_flight.push_back(hparam);
    }
    if ((zero == 1 || zero == 2) && !st.scenario.software.overlap_param_gather)
      dp_collective(st, CollectiveOp::kAllGather, bb.param_shard, bb.param, gb.elements * e, Phase::kOptimizer,
                    grad_group(st));
    // A host-placed gradient (auto's accumulated shard) is freed by the host stream that read it.
    const BufferId done = zero < 2 && !gb.host_optimizer ? bb.grad : bb.grad_shard;
    if (done != kNoId && st.program.buffer_at(done).placement == Placement::kHost) st.program.free(done, Stream::kHost);
    else st.release(done);
  }
  free_params_in_flight(0);
  if (st.loss() != kNoId) {
    if (grad_group_size(st) > 1) {
      Collective c;
      c.op = CollectiveOp::kAllReduce;
      c.group = grad_group(st);
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
