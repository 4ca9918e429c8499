// Gemini's chunk search and packing (shared/chunk_plan.h), against wastes worked out by hand and
// the figure of Colossal-AI's own test (tests/test_zero/test_gemini/test_search.py, commit
// 4f9953be335e).
#include <gtest/gtest.h>

#include "shared/chunk_plan.h"

namespace tandem {
namespace {

TEST(ChunkPlan, UnusedElementsOfNextFitPacking) {
  // Three 3s in chunks of 4: each chunk holds one, 1 left in each -> 3.
  EXPECT_EQ(chunk_unused_elements({3, 3, 3}, 4), 3);
  // {5, 3} in chunks of 8: one full chunk -> 0; in 6: [5] 1 left, [3] 3 left -> 4.
  EXPECT_EQ(chunk_unused_elements({5, 3}, 8), 0);
  EXPECT_EQ(chunk_unused_elements({5, 3}, 6), 4);
  // The open chunk's tail counts: {2} in 10 -> 8.
  EXPECT_EQ(chunk_unused_elements({2}, 10), 8);
}

TEST(ChunkPlan, SearchPicksTheLeastWaste) {
  // {5,3,5,3}, interval 1, range 3, no minimum: start at the largest size, 5.
  //   5: [5][3][5][3] -> 0+2+0+2 = 4     6: [5][3][5][3] -> 1+3+1+3 = 8
  //   7: [5][3][5][3] -> 2+4+2+4 = 12    8: [5,3][5,3]   -> 0
  ChunkSearchOptions o;
  o.interval = 1;
  o.search_range = 3;
  o.min_chunk = 0;
  o.filter_extra_large = false;
  ChunkSearch r = search_chunk_size({5, 3, 5, 3}, o);
  EXPECT_EQ(r.chunk_elements, 8);
  EXPECT_EQ(r.wasted_elements, 0);
  EXPECT_FALSE(r.keep_gathered);
  // Range 2 stops at 7: the best is 5 (waste 4). With dp 3, 5 is rounded up to 6.
  o.search_range = 2;
  EXPECT_EQ(search_chunk_size({5, 3, 5, 3}, o).chunk_elements, 5);
  EXPECT_EQ(search_chunk_size({5, 3, 5, 3}, o).wasted_elements, 4);
  o.dp = 3;
  EXPECT_EQ(search_chunk_size({5, 3, 5, 3}, o).chunk_elements, 6);
}

TEST(ChunkPlan, StartIsRoundedUpToTheIntervalAndTheMinimum) {
  // Largest 5, interval 4 -> start 8; range 0: only 8, which packs [5,3][5,3].
  ChunkSearchOptions o;
  o.interval = 4;
  o.search_range = 0;
  o.min_chunk = 0;
  EXPECT_EQ(search_chunk_size({5, 3, 5, 3}, o).chunk_elements, 8);
  // A minimum of 10 above every size: start 12; [5,3] leaves 4, the next 5 opens a chunk:
  // [5,3][5,3] in chunks of 12 -> waste 4 + 4 = 8.
  o.min_chunk = 10;
  const ChunkSearch r = search_chunk_size({5, 3, 5, 3}, o);
  EXPECT_EQ(r.chunk_elements, 12);
  EXPECT_EQ(r.wasted_elements, 8);
}

TEST(ChunkPlan, SmallModelIsOneGatheredChunk) {
  // Total 16 under a minimum of 32: one chunk of the total, rounded to dp 5 -> 20.
  ChunkSearchOptions o;
  o.min_chunk = 32;
  o.dp = 5;
  const ChunkSearch r = search_chunk_size({5, 3, 5, 3}, o);
  EXPECT_TRUE(r.keep_gathered);
  EXPECT_EQ(r.chunk_elements, 20);
}

TEST(ChunkPlan, ExtraLargeSizesAreLeftOutOfTheSearch) {
  // Ten 1s and one 1000: mean 1010/11 = 91.8, variance (10 * 90.8^2 + 908.2^2) / 11 = 82 479,
  // sigma 287.2, limit 953.4 -> the 1000 goes.
  std::vector<int64_t> s(10, 1);
  s.push_back(1000);
  const std::vector<int64_t> kept = without_extra_large(s);
  EXPECT_EQ(kept, std::vector<int64_t>(10, 1));
  // Equal sizes: sigma 0, nothing above the mean, all kept.
  EXPECT_EQ(without_extra_large({4, 4, 4}).size(), 3u);
}

TEST(ChunkPlan, ColossalAiGpt2SearchFigure) {
  // Colossal-AI's test_search.py: GPT-2 with 2 layers, n_embd 128, vocabulary 50 258, tied head,
  // search_range_m 1, search_interval 128, min_chunk_size_m 0 -> chunk size 527 872.
  // model.parameters() of GPT2LMHeadModel: wte 50258*128, wpe 1024*128, per layer ln_1 (w, b),
  // c_attn (128x384, 384), attn c_proj (128x128, 128), ln_2 (w, b), c_fc (128x512, 512),
  // mlp c_proj (512x128, 128); then ln_f (w, b). The wte (6 433 024) is above mean + 3 sigma
  // (3 820 504) and left out; the rest sums to 527 872 and fits one chunk of that size: waste 0.
  const std::vector<int64_t> layer = {128, 128, 49152, 384, 16384, 128, 128, 128, 65536, 512, 65536, 128};
  std::vector<int64_t> s = {50258 * 128, 1024 * 128};
  for (int l = 0; l < 2; ++l) s.insert(s.end(), layer.begin(), layer.end());
  s.push_back(128);
  s.push_back(128);
  ChunkSearchOptions o;
  o.search_range = 1 << 20;
  o.interval = 128;
  o.min_chunk = 0;
  const ChunkSearch r = search_chunk_size(s, o);
  EXPECT_EQ(r.chunk_elements, 527872);
  EXPECT_EQ(r.wasted_elements, 0);
  // With 4 data-parallel ranks (the test's world size 4): 527 872 is a multiple of 4, unchanged.
  o.dp = 4;
  EXPECT_EQ(search_chunk_size(s, o).chunk_elements, 527872);
}

TEST(ChunkPlan, PackingIsNextFitWithOversizedChunksOfTheirOwn) {
  // Chunks of 8, dp 4: {5,3} -> [0,1] full; 12 > 8 -> own chunk of 12; {2,7}: 2 opens a chunk
  // of 8 (the 12 is full), 7 > 6 left -> a new one.
  const std::vector<PackedChunk> c = pack_chunks({5, 3, 12, 2, 7}, 8, 4);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].members, (std::vector<int>{0, 1}));
  EXPECT_EQ(c[0].capacity, 8);
  EXPECT_EQ(c[1].members, (std::vector<int>{2}));
  EXPECT_EQ(c[1].capacity, 12);
  EXPECT_EQ(c[2].members, (std::vector<int>{3}));
  EXPECT_EQ(c[3].members, (std::vector<int>{4}));
  // 13 elements alone with dp 4 -> a chunk of 16.
  EXPECT_EQ(pack_chunks({13}, 8, 4)[0].capacity, 16);
}

TEST(ChunkPlan, StaticPolicySendsChunksToTheHostUntilTheFraction) {
  // Four chunks of 10: fraction 0.5 -> target 20: chunk 0 (sent 0 < 20), chunk 1 (10 < 20), then
  // 20 is not under 20. Fraction 0.3 -> target 12: chunks 0 and 1 (10 < 12). 0 -> none; 1 -> all.
  EXPECT_EQ(host_chunks({10, 10, 10, 10}, 0.5), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(host_chunks({10, 10, 10, 10}, 0.3), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(host_chunks({10, 10, 10, 10}, 0.0), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(host_chunks({10, 10, 10, 10}, 1.0), (std::vector<bool>{true, true, true, true}));
}

}  // namespace
}  // namespace tandem
