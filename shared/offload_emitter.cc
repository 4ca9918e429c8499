// Parameter chunks on the host (strategy.offload params, shared/chunk_layout.h), after Gemini's
// static placement (colossalai/zero/gemini/placement_policy.py, chunk/chunk.py, commit
// 4f9953be335e): a host chunk keeps its parameter shard and its optimizer states on the host.
// Before its first use in a pass its shard is copied to the device on the h2d stream and, under
// ZeRO-3, all-gathered there into the whole chunk (the device copy of the shard is freed before
// the next host chunk's is made); after its last use the whole chunk is freed as any ZeRO-3
// chunk. Its gradient shard goes down to the host after the backward and Adam runs on the host
// over the host shard (HybridAdam's CPU half), so nothing comes back up until the next
// iteration's gather. Under offload params the gradients stay on the device during the backward;
// under offload auto each chunk's reduced gradient shard is on the host after every micro-batch
// (grads_to_host, shared/grad_sync.cc).
#include "shared/auto_placement.h"
#include "shared/sequence_split.h"
#include "shared/step_state.h"

namespace tandem {
namespace {

std::string chunk_name(int k, const char* what) {
  std::string s("B");  // appends: GCC 12's -Wrestrict false positive on "B" + std::string
  s.append(std::to_string(k)).append(".").append(what);
  return s;
}

// The whole chunk allocated on the comm stream (after `throttle` when there is one) and
// all-gathered there from the device copy of its shard (bb.staging), under ZeRO-3.
void all_gather_from_staging(StepState& st, BucketBuffers& bb, DType dtype, TaskId throttle) {
  if (throttle == kNoId) st.program.alloc(bb.param, Stream::kGradComm);
  else st.program.alloc(bb.param, Stream::kGradComm, {throttle});
  Collective c;
  c.op = CollectiveOp::kAllGather;
  c.group = grad_group(st);
  c.bytes = st.program.buffer_at(bb.param).bytes;
  c.dtype = dtype;
  c.phase = Phase::kForward;
  c.buffers = {bb.staging, bb.param};
  st.program.collective(std::move(c), Stream::kGradComm);
}

}  // namespace

void gather_host_chunk(StepState& st, int k, TaskId throttle) {
  BucketBuffers& bb = st.bucket(k);
  const bool sharded = grad_group_size(st) > 1;
  auto after = [&](BufferId b, Stream s) {
    return throttle == kNoId ? st.program.alloc(b, s) : st.program.alloc(b, s, {throttle});
  };
  const Buffer& shard = st.program.buffer_at(bb.host_param);
  if (st.auto_record != nullptr) {
    // offload auto: the device copy stays until evicted (shared/auto_eviction.cc), so it comes up
    // only when not already there; with data parallelism it is then all-gathered into the chunk.
    if (sharded && bb.staging == kNoId)
      bb.staging = st.program.buffer(chunk_name(k, "param_shard_device"), shard.bytes, shard.dtype,
                                     BufferRole::kParam);
    const BufferId dev = sharded ? bb.staging : bb.param;
    if (!bb.resident) {
      after(dev, Stream::kH2D);
      st.program.copy(CopyDirection::kH2D, bb.host_param, dev, Stream::kH2D);
      bb.resident = true;
      st.auto_record->moves.push_back({int(st.auto_record->op_start.size()) - 1, k, true, shard.bytes});
    }
    if (sharded) all_gather_from_staging(st, bb, shard.dtype, throttle);
    return;
  }
  if (!sharded) {
    after(bb.param, Stream::kH2D);
    st.program.copy(CopyDirection::kH2D, bb.host_param, bb.param, Stream::kH2D);
    return;
  }
  if (bb.staging == kNoId)
    bb.staging = st.program.buffer(chunk_name(k, "param_shard_device"), shard.bytes, shard.dtype,
                                   BufferRole::kParam);
  // One device copy of a shard at a time: the previous one is freed on the compute stream, which
  // needs its all-gather before it uses that chunk, and the next is allocated after that free
  // (freed on the comm stream behind the all-gather, it could stay allocated past later Allocs:
  // shared/memory_order.h).
  if (st.staging_in_use != kNoId) {
    throttle = st.program.free(st.staging_in_use, Stream::kCompute);
    st.staging_in_use = kNoId;
  }
  after(bb.staging, Stream::kH2D);
  st.program.copy(CopyDirection::kH2D, bb.host_param, bb.staging, Stream::kH2D);
  all_gather_from_staging(st, bb, shard.dtype, throttle);
  st.staging_in_use = bb.staging;
}

void free_host_chunk_staging(StepState& st) {
  if (st.staging_in_use == kNoId) return;
  st.program.free(st.staging_in_use, Stream::kCompute);
  st.staging_in_use = kNoId;
}

void host_chunk_step(StepState& st, int k, BufferId hgrad, bool downloaded, int64_t n, TaskId wait) {
  BucketBuffers& bb = st.bucket(k);
  Compute c;
  c.kernel = Kernel::kAdam;
  c.dtype = st.dims.dtype;
  c.phase = Phase::kOptimizer;
  c.dims = {n};
  c.inputs = {hgrad};
  c.outputs = {bb.master != kNoId ? bb.master : bb.host_param, bb.m, bb.v, bb.host_param};
  if (wait == kNoId || downloaded) st.program.compute(std::move(c), {}, Stream::kHost);
  else st.program.compute(std::move(c), {wait}, Stream::kHost);
  if (downloaded) st.program.free(hgrad, Stream::kHost);
}

}  // namespace tandem
