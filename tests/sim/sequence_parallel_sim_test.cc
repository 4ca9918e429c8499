// Sequence parallelism over the sp axis in the simulator: one DGX H100 node, sp 8, a Llama-style
// layer (hidden 4096, 32 heads of 128, 8 kv heads) on a 32768-token sequence, bf16, two layers so
// that it replays in about a second.
//
// Ring attention (shared/ring_attention.h): each rank holds 4096 tokens; at every forward step
// the send of the held K/V block to the next rank is issued before the step's kernel, so the
// simulator must run the transfer while the kernel runs. Sizes: a K/V block is 4096 tokens * 2 *
// 1024 (8 kv heads * 128) * 2 B = 16 MiB, at most 450 GB/s (the preset's NVLink) 37 us or more;
// a step's kernel is at least 4 * 4096 * 4096 * 32 * 128 / 2 flop (half the 8192^2 square's
// 2.7e11 multiply-adds of a non-local step, shared/schedule_types.cc) = 1.4e11 flop, 140 us even
// at the 989 TFLOP/s peak. So every transfer of a non-final step starts before its step's kernel
// ends and ends after it starts. Ulysses (shared/ulysses.h) replays too: its all-to-alls are
// collectives of the sp group.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sim/simulation.h"

namespace tandem::sim {
namespace {

Schedule h100_sp8(const char* mode) {
  const std::vector<std::string> sets = {
      "cluster.preset=dgx-h100", "cluster.gpus=8",      "strategy.sp=8",     std::string("strategy.sp_mode=") + mode,
      "strategy.dtype=bf16",     "strategy.flash_attention=true",
      "model.layers=2",          "model.hidden=4096",   "model.heads=32",    "model.kv_heads=8",
      "model.seq_len=32768",     "model.vocab=32000",   "strategy.micro_batch=1", "strategy.global_batch=1"};
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

TEST(SequenceParallelSim, RingAttentionTransfersRunUnderTheStepKernels) {
  const Schedule s = h100_sp8("ring_attention");
  SimOptions o;
  o.record_tasks = true;
  SimResult r;
  ASSERT_NO_THROW(r = simulate(s, o));
  EXPECT_FALSE(r.oom);
  const Program p = s.program(0);
  std::map<TaskId, TaskTiming> at;
  for (const TaskTiming& t : r.tasks)
    if (t.rank == 0) at[t.task] = t;
  int overlapped = 0, steps = 0;
  TaskId pending_send = kNoId;
  for (const Task& t : p.tasks) {
    if (const auto* m = std::get_if<SendRecv>(&t.op); m && m->is_send && m->tag == 3) pending_send = t.id;
    const auto* c = std::get_if<Compute>(&t.op);
    if (!c || c->kernel != Kernel::kRingAttention) continue;
    ++steps;
    if (pending_send == kNoId) continue;  // the last step sends nothing
    const TaskTiming &send = at.at(pending_send), &kernel = at.at(t.id);
    EXPECT_LT(send.start_s, kernel.end_s) << "task " << t.id;
    EXPECT_GT(send.end_s, kernel.start_s) << "task " << t.id;
    ++overlapped;
    pending_send = kNoId;
  }
  EXPECT_EQ(steps, 2 * 8);          // 2 layers, 8 ring steps
  EXPECT_EQ(overlapped, 2 * 7);     // every step but the last sends its block on
}

TEST(SequenceParallelSim, UlyssesReplays) {
  const Schedule s = h100_sp8("ulysses");
  SimResult r;
  ASSERT_NO_THROW(r = simulate(s, {}));
  EXPECT_FALSE(r.oom);
  EXPECT_GT(r.iteration_time_s, 0);
  // 2 layers * 4 all-to-alls (QKV and output forward, their gradients backward) per rank, and the
  // data-and-sequence group's gradient and loss all-reduces.
  EXPECT_GE(r.collectives, 8u);
}


// The simulator replays one program per pipeline stage (Schedule::rank_classes: the rank at dp =
// tp = sp = 0) for every rank of the stage, translating peers and groups (Schedule::peer_for). The
// sp ranks' own programs differ from it in three ways only: the order in which a ring exchange
// posts its send and receive (parity order, on the two separate ring streams, with the same
// dependencies), the source index of a ring step (ring: not read by the cost model; ring
// attention: a mode-1 or mode-2 step, both 2c x c and costed alike, sim/compute_cost_model.cc) and
// the data task's chunk index (same bytes). So the shared replay must be exact: here every rank's
// own program is replayed instead (SimOptions::share_class_programs = false) and every rank's task
// end times must be the same multiset, to rounding, with an odd ring (sp 3, where rank 0 and rank
// 2 are both even and meet) and a pipeline.
std::vector<std::string> odd_ring_sets(const char* mode) {
  std::vector<std::string> sets = {
      "cluster.preset=dgx-h100", "cluster.gpus=6",       "strategy.sp=3",     std::string("strategy.sp_mode=") + mode,
      "strategy.pp=2",           "strategy.dtype=bf16",  "model.layers=2",    "model.hidden=768",
      "model.heads=6",           "model.kv_heads=6",     "model.seq_len=6144", "model.vocab=32000",
      "strategy.micro_batch=1",  "strategy.global_batch=2"};
  sets.push_back(std::string("strategy.flash_attention=") + (std::string(mode) == "ring" ? "false" : "true"));
  return sets;
}

SimResult replay(const Schedule& s, bool shared) {
  SimOptions o;
  o.record_tasks = true;
  o.share_class_programs = shared;
  o.fold_tensor_parallel = o.fold_data_parallel = false;  // one variable: the shared programs
  return simulate(s, o);
}

TEST(SequenceParallelSim, SharedStageProgramReplayIsExactForEverySpMode) {
  for (const char* mode : {"ring", "ring_attention", "ulysses"}) {
    SCOPED_TRACE(mode);
    const Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                                   odd_ring_sets(mode)));
    if (std::string(mode) != "ulysses") {
      // The programs do differ: rank 0 (even) posts its first ring send before its receive, rank 1
      // (odd) the other way round.
      auto first_ring_op_is_send = [&](int rank) {
        for (const Task& t : s.program(rank).tasks)
          if (const auto* m = std::get_if<SendRecv>(&t.op); m && (m->tag == 3 || m->tag == 5)) return m->is_send;
        ADD_FAILURE() << "no ring exchange on rank " << rank;
        return false;
      };
      EXPECT_TRUE(first_ring_op_is_send(0));
      EXPECT_FALSE(first_ring_op_is_send(1));
    }
    const SimResult shared = replay(s, true), own = replay(s, false);
    ASSERT_FALSE(shared.oom);
    ASSERT_FALSE(own.oom);
    EXPECT_EQ(shared.programs_generated, 2);  // one per stage
    EXPECT_EQ(own.programs_generated, 6);
    EXPECT_NEAR(shared.iteration_time_s, own.iteration_time_s, 1e-12 * own.iteration_time_s);
    std::map<int, std::vector<double>> ends_shared, ends_own;
    for (const TaskTiming& t : shared.tasks) ends_shared[t.rank].push_back(t.end_s);
    for (const TaskTiming& t : own.tasks) ends_own[t.rank].push_back(t.end_s);
    ASSERT_EQ(ends_shared.size(), 6u);
    ASSERT_EQ(ends_own.size(), 6u);
    for (int r = 0; r < 6; ++r) {
      std::vector<double>&a = ends_shared[r], &b = ends_own[r];
      ASSERT_EQ(a.size(), b.size()) << "rank " << r;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-12 * own.iteration_time_s) << "rank " << r;
    }
  }
}

}  // namespace
}  // namespace tandem::sim
