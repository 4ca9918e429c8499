// The planner's pipeline-aware memory walk (shared/pipeline_memory.h) against the program-order
// walk, on the tiny GPT (tests/shared/schedule_test_util.h: 4 layers, hidden 64, seq 32, micro-batch
// 2, 4 micro-batches, fp32) split in two pipeline stages of two layers each.
//
// The derivations below up to OneFOneBMostOverEveryExecution are for a runtime whose compute goes
// on while a send is in flight (software.pipeline_send_wait false: the sent buffer freed on the send
// stream when the send completes); every preset waits for its sends (docs/software.md), derived in
// the tests after them.
//
// The one buffer the two walks disagree on, derived by hand for 1F1B with 2 stages:
//  - stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3, stage 1 runs F0 B0 F1 B1 F2 B2 F3 B3;
//  - stage 0's program-order peak comes after F1, when it allocates for B0 (the receive buffer of
//    micro-batch 0's gradient and the first backward outputs) before that gradient arrives. The
//    program-order walk has freed F1's output x1 just before, right after its send;
//  - x1's send completes only when stage 1 posts the receive of micro-batch 1, which it does after
//    its F0 and B0. Stage 1 starts F0 after stage 0's F0 and B0 costs twice F0 in matrix flops, so
//    stage 1 posts it after stage 0 has finished F1 (which costs what stage 0's F0 does): at
//    stage 0's peak x1 is live. x0 is not: stage 1 posted its first receive at once.
//  - so stage 0 peaks one sent activation higher: [micro_batch * seq, hidden] fp32
//    = 2 * 32 * 64 * 4 = 16384 bytes (tensor parallelism splits no activation between stages:
//    each tensor-parallel rank sends the whole [tokens, hidden]).
//  - stage 1's sends are gradients dx_k, sent at the end of its B_k; stage 0 posted their receive
//    after its F_{k+1}, earlier, so they leave at once, and stage 1's peak (the head's logits and
//    their gradient in B_k, before any send) is the program-order one.
#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "shared/memory_timeline.h"
#include "shared/pipeline_memory.h"
#include "shared/rank_grid.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

constexpr int64_t kActivationBytes = 2 * 32 * 64 * 4;  // micro_batch * seq * hidden * fp32
constexpr const char* kNoSendWait = "software.pipeline_send_wait=false";

int64_t program_order_peak(const Schedule& s, int rank) { return memory_profile(s.program(rank)).peak_device_bytes; }

TEST(PipelineMemory, OneFOneBStageZeroHoldsOneSentActivationMore) {
  Schedule s(testing::tiny({"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=1f1b", kNoSendWait}));
  const std::vector<MemoryProfile> prof = pipeline_memory_profiles(s, 0);
  ASSERT_EQ(prof.size(), 2u);
  EXPECT_EQ(prof[0].peak_device_bytes - program_order_peak(s, 0), kActivationBytes);
  EXPECT_EQ(prof[1].peak_device_bytes - program_order_peak(s, 1), 0);
  // The planner's per-rank figure is this walk's, from either end of the pipeline.
  EXPECT_EQ(memory_profile(s, 0).peak_device_bytes, prof[0].peak_device_bytes);
  EXPECT_EQ(memory_profile(s, 1).peak_device_bytes, prof[1].peak_device_bytes);
  EXPECT_EQ(pipeline_memory_profiles(s, 1)[0].peak_device_bytes, prof[0].peak_device_bytes);
  // The extra bytes are activations; model states are the program's prologue either way.
  const MemoryProfile plain = memory_profile(s.program(0));
  EXPECT_EQ(prof[0].at_peak[BufferRole::kActivation] - plain.at_peak[BufferRole::kActivation], kActivationBytes);
  EXPECT_EQ(prof[0].model_states.total(), plain.model_states.total());
}

TEST(PipelineMemory, TensorParallelStagesWalkTheirOwnPipeline) {
  // tp 2 x pp 2 (1F1B is the default schedule): pipelines {0, 2} and {1, 3}; the tensor-parallel
  // all-reduces of a stage wait for no one outside the pipeline. Same derivation as above.
  Schedule s(testing::tiny({"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2", kNoSendWait}));
  EXPECT_EQ(pipeline_ranks(s, 1), (std::vector<int>{1, 3}));
  for (int r = 0; r < 4; ++r) {
    const int64_t extra = s.grid().coord(r).pp == 0 ? kActivationBytes : 0;
    EXPECT_EQ(memory_profile(s, r).peak_device_bytes - program_order_peak(s, r), extra) << "rank " << r;
  }
}

TEST(PipelineMemory, WithoutAPipelineItIsTheProgramOrderWalk) {
  Schedule s(testing::tiny({"cluster.gpus=2", "strategy.zero_stage=3"}));
  for (int r = 0; r < 2; ++r) {
    const MemoryProfile a = memory_profile(s, r), b = memory_profile(s.program(r));
    EXPECT_EQ(a.peak_device_bytes, b.peak_device_bytes);
    EXPECT_EQ(a.peak_task, b.peak_task);
    EXPECT_EQ(pipeline_memory_profiles(s, r).at(0).peak_device_bytes, b.peak_device_bytes);
  }
}

// The range over paces (shared/pipeline_memory.h pipeline_peak_range), GPipe with 2 stages and 4
// micro-batches, derived by hand:
//  - stage 0 runs F0 F1 F2 F3 then the backwards; it sends x_k at the end of F_k, one send at a
//    time on its forward send stream (send x_k, free x_k, send x_{k+1}, ...). Stage 1 posts the
//    receive of x_0 at once (its Alloc waits for no compute) and that of x_k, k > 0, after its
//    own F_{k-1}.
//  - most (any execution, shared/worst_case_peak.h): stage 1 may be stopped before it posts
//    anything (a process the operating system has not run yet), so no send of stage 0 completes:
//    x0, x1, x2 and x3 are all live when stage 0, after F3, allocates the receive of its first
//    backward's gradient — its peak in program order, where each x_k is freed right after its
//    send: the most is the program-order peak + 4 activations. (Later, before B3 can start, stage
//    1 must have received x3, so x0..x2 are freed by then.)
//  - peers early: every receive is posted before stage 0 sends, so x_k is freed when its transfer
//    ends. x3's transfer starts at the end of F3, when stage 0 also posts the receive of its first
//    backward's gradient (that Alloc waits only for F3, off the pipeline stream): it is still in
//    flight then, so the least is the program-order peak + 1 activation (the planner's roofline
//    figure too).
//  - stage 1 sends gradients: g_k at the end of its B_k, after every forward. However late stage
//    0 posts their receives, the held gradients (at most one per backward done) never outweigh
//    the activations that backward freed, and stage 1's peak is at its first backward, before any
//    send: both ends are stage 1's program-order peak.
TEST(PipelineMemory, GPipePeakRangeOverPaces) {
  Schedule s(testing::tiny({"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=gpipe", kNoSendWait}));
  const PeakRange r0 = pipeline_peak_range(s, 0), r1 = pipeline_peak_range(s, 1);
  EXPECT_EQ(r0.least_bytes, program_order_peak(s, 0) + kActivationBytes);
  EXPECT_EQ(r0.most_bytes, program_order_peak(s, 0) + 4 * kActivationBytes);
  EXPECT_EQ(r1.least_bytes, program_order_peak(s, 1));
  EXPECT_EQ(r1.most_bytes, program_order_peak(s, 1));
  // The planner's figure lies in the range.
  EXPECT_GE(memory_profile(s, 0).peak_device_bytes, r0.least_bytes);
  EXPECT_LE(memory_profile(s, 0).peak_device_bytes, r0.most_bytes);
}

// The most over every execution (shared/worst_case_peak.h), 1F1B with 2 stages, derived by hand.
// The execution the host run met under load (exec_run_test, tp 2 x pp 2): stage 0 sends x1 and is
// stopped before it posts the receive of dx0, so stage 1 runs F1 with dx0 still live.
//  - stage 0 (F0 F1 B0 F2 B1 F3 B2 B3): B0 needs dx0, which stage 1 sends after F0, for which it
//    needs only that stage 0's send of x0 has started. Nothing makes stage 0 see that send
//    complete (its runtime may not test it again for any time), and x1, x2 wait behind x0 on the
//    forward send stream. So when stage 0, after B0 and F2, allocates for B1 (the receive buffer of
//    dx1 and B1's first outputs, allocated before dx1 arrives), x0, x1 and x2 can all be live where
//    the program-order walk has freed them: +3 activations.
//  - stage 1 (F0 B0 F1 B1 F2 B2 F3 B3): likewise dx0's send may never be seen complete while stage
//    0, which needs only that it started, goes on to send x1 and x2; dx1 waits behind dx0 on the
//    backward send stream. At stage 1's peak in program order (the head's logits and their
//    gradient at the start of B2, after F2), dx0 and dx1 can both be live: +2 activations.
TEST(PipelineMemory, OneFOneBMostOverEveryExecution) {
  Schedule s(testing::tiny({"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=1f1b", kNoSendWait}));
  EXPECT_EQ(pipeline_peak_range(s, 0).most_bytes, program_order_peak(s, 0) + 3 * kActivationBytes);
  EXPECT_EQ(pipeline_peak_range(s, 1).most_bytes, program_order_peak(s, 1) + 2 * kActivationBytes);
  // The planner's figure (roofline paces) lies in the range.
  for (int r = 0; r < 2; ++r) {
    const PeakRange range = pipeline_peak_range(s, r);
    EXPECT_LE(range.least_bytes, memory_profile(s, r).peak_device_bytes) << "rank " << r;
    EXPECT_GE(range.most_bytes, memory_profile(s, r).peak_device_bytes) << "rank " << r;
  }
}

// Waiting for the sends (software.pipeline_send_wait, every preset), derived by hand: a sent
// buffer's Free is on the compute stream, after the send and after the next pass's receive is
// posted, before that pass's first kernel (shared/step_generator.cc). Then
//  - every Free of a rank is on a stream in the program-order memory walk (non-pipeline), and the
//    only memory tasks on pipeline streams are the receive buffers' Allocs, each emitted right
//    after the compute-stream task it waits for (nothing else is emitted between them on this
//    tiny GPT: no tensor, data or ZeRO groups, no offload);
//  - so in any execution a receive Alloc happens no earlier than the compute-stream task before
//    it, hence after every memory task before it in program order; it may happen later (its
//    stream busy with an earlier receive), which only lowers the bytes live. The Allocs and Frees
//    done at any time are a prefix of the program-order walk less some receive Allocs: no
//    execution peaks above the program-order walk, and an early receive (the peers ahead, or the
//    planner's roofline paces: an Alloc at the end of the task it waits for, ties in program
//    order) meets it. The planner's walk is the program-order one and the range is one point, on
//    both stages, for 1F1B and GPipe alike (the GPipe stage 0 that held all four x_k above now
//    frees each before its next forward).
TEST(PipelineMemory, SendWaitWalksInProgramOrderAtEveryPace) {
  for (const char* schedule : {"1f1b", "gpipe"}) {
    Schedule s(testing::tiny({"cluster.gpus=2", "strategy.pp=2", std::string("strategy.pp_schedule=") + schedule,
                              "software.pipeline_send_wait=true"}));
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(memory_profile(s, r).peak_device_bytes, program_order_peak(s, r)) << schedule << " rank " << r;
      const PeakRange range = pipeline_peak_range(s, r);
      EXPECT_EQ(range.least_bytes, program_order_peak(s, r)) << schedule << " rank " << r;
      EXPECT_EQ(range.most_bytes, program_order_peak(s, r)) << schedule << " rank " << r;
    }
  }
}

TEST(PipelineMemory, WithoutAPipelineTheRangeIsOnePoint) {
  Schedule s(testing::tiny({"cluster.gpus=2", "strategy.zero_stage=3"}));
  const PeakRange r = pipeline_peak_range(s, 1);
  EXPECT_EQ(r.least_bytes, program_order_peak(s, 1));
  EXPECT_EQ(r.most_bytes, program_order_peak(s, 1));
}

}  // namespace
}  // namespace tandem
