// The offload programs' planned memory, device and host, is the worst case of every execution
// (shared/memory_order.h):
// no Free that comes before an Alloc in program order can run after it, whatever the copies take.
// Session 8's programs freed a gradient chunk on the d2h stream behind its copy down while the next
// chunk's gradient was allocated on the compute stream: two chunks on the device in time, one in
// the plan. Now the chunk in flight is freed on the compute stream, before the gradient two chunks
// later (at most two in flight), and the plan counts both.
#include <gtest/gtest.h>

#include <algorithm>
#include <variant>

#include "shared/memory_order.h"
#include "shared/memory_timeline.h"
#include "shared/program_builder.h"
#include "shared/reference_executor.h"
#include "shared/roofline_cost.h"
#include "tests/shared/schedule_test_util.h"

namespace tandem {
namespace {

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<std::string> kChunks = {"strategy.chunk_min_m=0", "strategy.chunk_search_range_m=0"};

// The offload configurations of tests/exec/run_test.cc (and auto with nothing evicted).
std::vector<std::vector<std::string>> offload_configs() {
  return {
      {"strategy.offload=optimizer"},
      {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.offload=optimizer"},
      with(kChunks, {"strategy.offload=params", "strategy.offload_fraction=0.5"}),
      with(kChunks, {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.offload=params", "strategy.offload_fraction=0.5"}),
      with(kChunks, {"strategy.offload=auto"}),
      with(kChunks, {"strategy.offload=auto", "cluster.hbm_gib=0.003"}),
      with(kChunks, {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.offload=auto", "cluster.hbm_gib=0.003"}),
      with(kChunks, {"strategy.offload=auto", "cluster.hbm_gib=0.0245", "model.hidden=256", "model.seq_len=8",
                     "strategy.micro_batch=1", "strategy.global_batch=1", "strategy.recompute=full"}),
  };
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + " ";
  return s;
}

std::string describe(const Program& p, TaskId id) {
  const Task& t = p.tasks[id];
  const BufferId b = std::holds_alternative<Alloc>(t.op) ? std::get<Alloc>(t.op).buffer : std::get<Free>(t.op).buffer;
  return std::string(std::holds_alternative<Alloc>(t.op) ? "Alloc " : "Free ") + p.buffers[b].name + " (task " +
         std::to_string(id) + ", " + to_string(t.stream) + ")";
}

TEST(OffloadMemoryOrder, TheCheckFindsAFreeBehindACopyInFlight) {
  // A gradient copied down and freed on the d2h stream, then the next gradient allocated on the
  // compute stream: nothing orders the two, so the free may come after the allocation.
  for (const bool free_on_compute : {false, true}) {
    ProgramBuilder b(0);
    const BufferId g0 = b.buffer("g0", 64, DType::kFp32, BufferRole::kGrad);
    const BufferId g1 = b.buffer("g1", 64, DType::kFp32, BufferRole::kGrad);
    const BufferId h = b.buffer("h", 64, DType::kFp32, BufferRole::kGrad, Placement::kHost);
    b.alloc(h, Stream::kCompute);
    b.alloc(g0, Stream::kCompute);
    b.copy(CopyDirection::kD2H, g0, h, Stream::kD2H);
    const TaskId f = b.free(g0, free_on_compute ? Stream::kCompute : Stream::kD2H);
    const TaskId a = b.alloc(g1, Stream::kCompute);
    const Program p = std::move(b).finish();
    const auto u = first_unordered_free(p, Placement::kDevice);
    if (free_on_compute) {
      EXPECT_FALSE(u.has_value());
    } else {
      ASSERT_TRUE(u.has_value());
      EXPECT_EQ(u->free, f);
      EXPECT_EQ(u->alloc, a);
    }
  }
}

TEST(OffloadMemoryOrder, ThePlanBoundsEveryExecution) {
  for (const std::vector<std::string>& sets : offload_configs()) {
    const Schedule s(testing::tiny(sets));
    for (int r = 0; r < s.world_size(); ++r) {
      const Program p = s.program(r);
      for (const Placement place : {Placement::kDevice, Placement::kHost}) {
        const auto u = first_unordered_free(p, place);
        EXPECT_FALSE(u.has_value()) << join(sets) << "rank " << r << ": " << describe(p, u->free)
                                    << " may run after " << describe(p, u->alloc);
      }
    }
  }
}

TEST(OffloadMemoryOrder, TensorAndSequenceParallelProgramsToo) {
  // Megatron-SP's column-parallel backward runs the weight-gradient GEMM under the dgrad's
  // reduce-scatter and waits for it after (shared/step_state.cc): its full-size partial is freed
  // on the compute stream after the wgrad. Freed on the comm stream instead (session 9's first
  // take), the next Alloc on the compute stream could run before that free: the walk under-counted
  // one partial buffer (the check found "m0.x_embed on comm" before "L0.m0.y1").
  const std::vector<std::vector<std::string>> configs = {
      {"cluster.gpus=2", "strategy.tp=2"},
      {"cluster.gpus=2", "strategy.tp=2", "strategy.sp_mode=megatron"},
      {"cluster.gpus=4", "strategy.tp=2", "strategy.sp_mode=megatron", "strategy.pp=2"},
      {"cluster.gpus=4", "strategy.tp=2", "strategy.sp_mode=megatron", "strategy.zero_stage=1"},
  };
  for (const std::vector<std::string>& sets : configs) {
    const Schedule s(testing::tiny(sets));
    for (int r = 0; r < s.world_size(); ++r) {
      const Program p = s.program(r);
      const auto u = first_unordered_free(p, Placement::kDevice);
      EXPECT_FALSE(u.has_value()) << join(sets) << "rank " << r << ": " << describe(p, u->free) << " may run after "
                                  << describe(p, u->alloc);
    }
  }
}

TEST(OffloadMemoryOrder, TwoChunksInFlightAtThePeak) {
  // Auto under 0.003 GiB, ZeRO-3 over 2 ranks (the host run's dp2_zero3_offload_auto_hbm,
  // tests/exec/run_test.cc). Chunks of 49 408 fp32 elements (197 632 bytes, shards of half that;
  // tests/shared/offload_schedule_test.cc), buckets in backward order: B0 the head, B1 layer 3,
  // B5 the embedding. The peak is at an allocation of layer 3's backward: the head chunk's
  // gradient and its reduced shard (rs_out) are still on the device, their copy to the host in
  // flight, while layer 3's gradient is computed; the embedding's gradient is live since the
  // head's backward wrote the tied table. Gradients: 3 whole chunks; comm: one shard. Session 8's
  // plan freed the head chunk's before layer 3's was allocated (one chunk fewer).
  const Schedule s(testing::tiny(with(kChunks, {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.offload=auto",
                                                "cluster.hbm_gib=0.003"})));
  const Program p = s.program(0);
  const MemoryProfile m = memory_profile(s, 0);
  constexpr int64_t kChunkBytes = 49408 * 4;
  EXPECT_EQ(m.at_peak[BufferRole::kGrad], 3 * kChunkBytes);
  EXPECT_EQ(m.at_peak[BufferRole::kComm], kChunkBytes / 2);
  const Alloc* a = std::get_if<Alloc>(&p.tasks[m.peak_task].op);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(p.buffers[a->buffer].name.rfind("L3.", 0), 0u) << p.buffers[a->buffer].name;
  // Both gradients of the peak are allocated there (named, whole chunks).
  int64_t live_b0 = 0, live_b1 = 0;
  for (TaskId t = 0; t <= m.peak_task; ++t) {
    const Task& task = p.tasks[t];
    const bool alloc = std::holds_alternative<Alloc>(task.op), free = std::holds_alternative<Free>(task.op);
    if (!alloc && !free) continue;
    const Buffer& b = p.buffers[alloc ? std::get<Alloc>(task.op).buffer : std::get<Free>(task.op).buffer];
    int64_t* live = b.name == "B0.grads" ? &live_b0 : b.name == "B1.grads" ? &live_b1 : nullptr;
    if (live) *live += alloc ? b.bytes : -b.bytes;
  }
  EXPECT_EQ(live_b0, kChunkBytes);
  EXPECT_EQ(live_b1, kChunkBytes);
}

// Live bytes (of `place`) of rank 0 with its Allocs and Frees taken in the order they end in a
// run of the reference executor (as the simulator accounts them), not in program order.
int64_t peak_in_time(const Schedule& s, const TaskCost& cost, Placement place) {
  ReferenceOptions o;
  o.memory_in_program_order = false;
  const ReferenceRun run = run_reference(s, cost, o);
  const Program p = s.program(0);
  std::vector<TaskId> ops;
  for (const Task& t : p.tasks)
    if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op)) ops.push_back(t.id);
  const std::vector<TaskTime>& times = run.times[0];
  std::stable_sort(ops.begin(), ops.end(), [&](TaskId a, TaskId b) { return times[a].end_s < times[b].end_s; });
  int64_t live = 0, peak = 0;
  for (TaskId id : ops) {
    const Task& t = p.tasks[id];
    const bool alloc = std::holds_alternative<Alloc>(t.op);
    const Buffer& b = p.buffers[alloc ? std::get<Alloc>(t.op).buffer : std::get<Free>(t.op).buffer];
    if (b.placement != place) continue;
    live += alloc ? b.bytes : -b.bytes;
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(OffloadMemoryOrder, CopiesSlowerThanTheBackwardStayWithinThePlan) {
  // Copies 10^4 times slower than the roofline (a PCIe link far slower than the GPU): under
  // session 8's order every gradient chunk's copy was still in flight when the next was allocated.
  // Whatever the copies take, the peak in time is at most the plan (shared/memory_order.h).
  for (const std::vector<std::string>& sets : offload_configs()) {
    const Schedule s(testing::tiny(sets));
    const TaskCost roofline = roofline_cost(s);
    const MemoryProfile planned = memory_profile(s, 0);
    for (const double copy_factor : {1e-4, 1.0, 1e4}) {
      const TaskCost cost = [&](int r, const Program& p, const Task& t) {
        const double c = roofline(r, p, t);
        return std::holds_alternative<Copy>(t.op) ? c * copy_factor : c;
      };
      EXPECT_LE(peak_in_time(s, cost, Placement::kDevice), planned.peak_device_bytes) << join(sets) << "copies x" << copy_factor;
      EXPECT_LE(peak_in_time(s, cost, Placement::kHost), planned.peak_host_bytes) << join(sets) << "copies x" << copy_factor;
    }
  }
}

}  // namespace
}  // namespace tandem
