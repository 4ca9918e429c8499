// strategy.gpu_margin_mem_ratio under offload auto (docs/offload.md, "Optimizer states in the GPU's
// margin"): Gemini's GeminiOptimizer._maybe_move_fp32_params (gemini_optimizer.py:313-343 at
// 4f9953be) moves, at the first step, the fp32 master chunks (with their parameters, gradients and
// Adam states) of as many chunks as ratio x margin / 4 bytes hold, walking them in parameter order:
// a chunk moves while the bytes taken with it stay strictly under the budget (:328), and the walk
// goes on past a chunk that does not fit. The margin is the device's capacity less the warm-up's
// peak (ChunkMemStatsCollector.cuda_margin_mem); 4 is HybridAdam's num_fp32_shards_per_param.
#include <gtest/gtest.h>

#include <cstdio>
#include <variant>

#include "shared/auto_placement.h"
#include "shared/error.h"
#include "shared/memory_timeline.h"
#include "shared/param_layout.h"
#include "shared/step_generator.h"
#include "tests/shared/schedule_test_util.h"

namespace tandem {
namespace {

using testing::tiny;

// The tiny GPT's 6 chunks of 49 408 fp32 elements (tests/shared/offload_schedule_test.cc derives
// them): 197 632 bytes, which is also a chunk's fp32 shard on one rank.
constexpr int64_t kChunkBytes = 49408 * 4;
const std::vector<std::string> kAuto = {"strategy.offload=auto", "strategy.chunk_min_m=0",
                                        "strategy.chunk_search_range_m=0"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string ratio_set(double r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "strategy.gpu_margin_mem_ratio=%.17g", r);
  return buf;
}

struct Moved {
  int64_t h2d = 0, d2h = 0, copies = 0;
  int host_adams = 0, device_adams = 0;
};
Moved moved(const Program& p) {
  Moved m;
  for (const Task& t : p.tasks) {
    if (const Copy* c = std::get_if<Copy>(&t.op)) {
      (c->direction == CopyDirection::kH2D ? m.h2d : m.d2h) += c->bytes;
      ++m.copies;
    }
    if (const Compute* c = std::get_if<Compute>(&t.op); c && c->kernel == Kernel::kAdam)
      (t.stream == Stream::kHost ? m.host_adams : m.device_adams)++;
  }
  return m;
}

TEST(OffloadMargin, ChunksTakenInOrderWhileStrictlyUnderTheBudget) {
  // 10 + 10 = 20 < 25, 30 is not: the first two.
  EXPECT_EQ(margin_chunks({10, 10, 10, 10}, 25), (std::vector<bool>{true, true, false, false}));
  // Strictly under: 10 < 20, but 10 + 10 = 20 is not under 20.
  EXPECT_EQ(margin_chunks({10, 10, 10, 10}, 20), (std::vector<bool>{true, false, false, false}));
  // The walk goes on past a chunk that does not fit: 10; 10 + 30 = 40 no; 10 + 5 = 15 < 20.
  EXPECT_EQ(margin_chunks({10, 30, 5}, 20), (std::vector<bool>{true, false, true}));
  // A chunk kept gathered (0 bytes here) never moves; a budget of 0 moves nothing.
  EXPECT_EQ(margin_chunks({0, 10}, 100), (std::vector<bool>{false, true}));
  EXPECT_EQ(margin_chunks({10, 10}, 0), (std::vector<bool>{false, false}));
}

// One rank, 6 chunks, 4 micro-batches, the tiny GPT's 80 GiB (nothing evicted). With ratio 0
// (tests/shared/offload_schedule_test.cc, EveryChunksOptimizerStateAndGradientGoToTheHost) every
// chunk's gradient goes down each micro-batch (24 chunks down) and comes up to be added to from
// the second (18) with its updated parameters once (6): 24 up. The margin M = HBM - the peak of
// that program (its memory walk); the ratio is chosen so that the budget ratio x M / 4 is 2.5
// chunks' fp32 shards: chunks 1 and 2 in execution order (the embedding's and L0's) move (2 C < 2.5 C,
// 3 C is not). Those two keep their gradients and Adam on the device: the 4 others move
// 4 x 4 = 16 chunks down and 4 x 3 + 4 = 16 up; 4 Adams on the host stream, 2 on the device's.
// Their Adam m and v (fp32, tandem's fp32 model has no separate master) are 2 x 2 = 4 chunks of
// optimizer state on the device; the host keeps the 4 others' master, m, v and accumulated
// gradient (16 chunks) and one updated-parameter buffer (17).
TEST(OffloadMargin, TheMarginHoldsTwoChunksOfTheTinyGpt) {
  const Schedule base(tiny(kAuto));
  const Scenario& sc0 = base.scenario();
  const int64_t margin = sc0.cluster.hbm_bytes() - memory_profile(base, 0).peak_device_bytes;
  ASSERT_GT(margin, 10 * kChunkBytes);  // so that the ratio below is at most 1
  const double ratio = 2.5 * double(kChunkBytes) * 4 / double(margin);

  const Scenario sc = tiny(with(kAuto, {ratio_set(ratio)}));
  const Schedule s(sc);
  const AutoPlacement a = plan_offload_auto(sc, s.grid());
  EXPECT_EQ(a.margin_bytes, margin);
  EXPECT_EQ(a.chunks.device_optimizer, (std::vector<bool>{true, true, false, false, false, false}));
  EXPECT_EQ(a.chunks.host, (std::vector<bool>(6, false)));
  const ParamLayout lay = make_param_layout(sc, 0, 0, &a.chunks);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(lay.buckets[size_t(k)].host_optimizer, k < 4) << k;  // backward order

  const Program p = s.program(0);
  const Moved m = moved(p);
  EXPECT_EQ(m.d2h, 16 * kChunkBytes);
  EXPECT_EQ(m.h2d, 16 * kChunkBytes);
  EXPECT_EQ(m.copies, 32);
  EXPECT_EQ(m.host_adams, 4);
  EXPECT_EQ(m.device_adams, 2);
  const MemoryProfile mp = memory_profile(s, 0);
  EXPECT_EQ(mp.at_peak[BufferRole::kOptimizer], 4 * kChunkBytes);
  EXPECT_EQ(mp.peak_host_bytes, 17 * kChunkBytes);

  // Ratio 0 and a ratio whose budget is under one chunk's shard (0.9 C) move nothing: the programs
  // are the ratio-0 program, task for task.
  const Scenario none = tiny(with(kAuto, {ratio_set(0.9 * double(kChunkBytes) * 4 / double(margin))}));
  const Schedule sn(none);
  EXPECT_EQ(plan_offload_auto(none, sn.grid()).chunks.device_optimizer, std::vector<bool>(6, false));
  EXPECT_EQ(sn.program(0).tasks.size(), base.program(0).tasks.size());
  EXPECT_EQ(moved(sn.program(0)).h2d, 24 * kChunkBytes);
  // Ratio 1: the budget M / 4 holds every chunk (6 C < M / 4 since M > 24 C): nothing crosses
  // PCIe and every Adam runs on the device.
  ASSERT_GT(margin, 24 * kChunkBytes);
  const Scenario all = tiny(with(kAuto, {"strategy.gpu_margin_mem_ratio=1"}));
  const Schedule sa(all);
  const Moved ma = moved(sa.program(0));
  EXPECT_EQ(ma.copies, 0);
  EXPECT_EQ(ma.host_adams, 0);
  EXPECT_EQ(ma.device_adams, 6);
}

// ZeRO-3 over 2 ranks: a chunk's fp32 shard is C / 2, so a budget of 2.5 C holds 4 of them
// (4 x C/2 = 2 C < 2.5 C, 5 x C/2 = 2.5 C is not under it). Global batch 8 / micro-batch 2 /
// dp 2 = 2 micro-batches a rank: the 2 host chunks move their shard down twice, and up once
// (accumulated) and once (parameters): 4 shards down, 4 up.
TEST(OffloadMargin, ShardsUnderZero3) {
  const std::vector<std::string> dp2 = with(kAuto, {"cluster.gpus=2", "strategy.zero_stage=3"});
  const Schedule base(tiny(dp2));
  const int64_t margin = base.scenario().cluster.hbm_bytes() - memory_profile(base, 0).peak_device_bytes;
  const double ratio = 2.5 * double(kChunkBytes) * 4 / double(margin);
  const Scenario sc = tiny(with(dp2, {ratio_set(ratio)}));
  const Schedule s(sc);
  const AutoPlacement a = plan_offload_auto(sc, s.grid());
  EXPECT_EQ(a.chunks.device_optimizer, (std::vector<bool>{true, true, true, true, false, false}));
  const Moved m = moved(s.program(0));
  EXPECT_EQ(m.d2h, 4 * (kChunkBytes / 2));
  EXPECT_EQ(m.h2d, 4 * (kChunkBytes / 2));
  EXPECT_EQ(m.host_adams, 2);
  EXPECT_EQ(m.device_adams, 4);
}

void expect_bad_input(const std::vector<std::string>& sets, const std::string& words) {
  try {
    (void)tiny(sets);
    ADD_FAILURE() << "accepted; expected: " << words;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(OffloadMargin, Rules) {
  expect_bad_input(with(kAuto, {"strategy.gpu_margin_mem_ratio=1.5"}), "strategy.gpu_margin_mem_ratio");
  expect_bad_input(with(kAuto, {"strategy.gpu_margin_mem_ratio=-0.1"}), "[0, 1]");
  expect_bad_input({"strategy.offload=optimizer", "strategy.gpu_margin_mem_ratio=0.5"}, "offload auto only");
  expect_bad_input({"strategy.gpu_margin_mem_ratio=0.5"}, "offload auto only");
}

}  // namespace
}  // namespace tandem
