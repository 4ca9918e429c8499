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

}  // namespace
}  // namespace tandem::sim
