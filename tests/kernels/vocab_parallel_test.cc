// Vocab-parallel embedding and cross-entropy over 2 shards, combined by hand the way the
// all-reduces would (sum of partial embeddings; max of maxes, sum of sum_exps, sum of target
// logits), equal the 1-shard results.

#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/embedding.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kVocab = 7, kCols = 3, kN = 5;
// Shard 0 holds vocabulary rows [0, 4), shard 1 rows [4, 7).
constexpr std::int64_t kOffset[2] = {0, 4};
constexpr std::int64_t kRows[2] = {4, 3};
const std::vector<std::int32_t> kTokens = {5, 0, 3, 6, 5};

TEST(CpuVocabParallel, EmbeddingShardsSumToTheFullLookupAndSplitTheGradient) {
  const auto table = random_floats(kVocab * kCols, 91);
  const auto dout = random_floats(kN * kCols, 92);
  std::vector<float> full(kN * kCols), dfull(kVocab * kCols, 0.0f);
  cpu::embedding_forward(kTokens.data(), kN, table.data(), kVocab, kCols, 0, full.data());
  cpu::embedding_backward(kTokens.data(), kN, dout.data(), kVocab, kCols, 0, dfull.data());

  std::vector<float> summed(kN * kCols, 0.0f);
  for (int shard = 0; shard < 2; ++shard) {
    const float* rows = table.data() + kOffset[shard] * kCols;
    std::vector<float> part(kN * kCols), dpart(kRows[shard] * kCols, 0.0f);
    cpu::embedding_forward(kTokens.data(), kN, rows, kRows[shard], kCols, kOffset[shard],
                           part.data());
    for (std::size_t i = 0; i < part.size(); ++i) summed[i] += part[i];  // the all-reduce
    cpu::embedding_backward(kTokens.data(), kN, dout.data(), kRows[shard], kCols, kOffset[shard],
                            dpart.data());
    const std::vector<float> expected(dfull.begin() + kOffset[shard] * kCols,
                                      dfull.begin() + (kOffset[shard] + kRows[shard]) * kCols);
    EXPECT_EQ(dpart, expected) << "shard " << shard;
  }
  EXPECT_EQ(summed, full);
}

TEST(CpuVocabParallel, CrossEntropyShardsComposeTheFullLossAndGradient) {
  const auto logits = random_floats(kN * kVocab, 93, -4.0f, 4.0f);
  const float scale = 0.5f;
  std::vector<float> max(kN), sum_exp(kN), target(kN), loss(kN), dfull(kN * kVocab);
  cpu::cross_entropy_local_max(logits.data(), kN, kVocab, max.data());
  cpu::cross_entropy_local_sum_exp(logits.data(), kN, kVocab, max.data(), sum_exp.data());
  cpu::cross_entropy_target_logit(logits.data(), kN, kVocab, kTokens.data(), 0, target.data());
  cpu::cross_entropy_loss(max.data(), sum_exp.data(), target.data(), kN, loss.data());
  cpu::cross_entropy_backward(logits.data(), kN, kVocab, kTokens.data(), 0, max.data(),
                              sum_exp.data(), scale, dfull.data());

  // Each shard sees its columns of the logits as a dense [kN, kRows[shard]] matrix.
  std::vector<float> shard_logits[2];
  for (int shard = 0; shard < 2; ++shard) {
    for (std::int64_t i = 0; i < kN; ++i) {
      const auto row = logits.begin() + i * kVocab + kOffset[shard];
      shard_logits[shard].insert(shard_logits[shard].end(), row, row + kRows[shard]);
    }
  }
  std::vector<float> global_max(kN, -1e30f), global_sum(kN, 0.0f), global_target(kN, 0.0f);
  for (int shard = 0; shard < 2; ++shard) {
    std::vector<float> part(kN);
    cpu::cross_entropy_local_max(shard_logits[shard].data(), kN, kRows[shard], part.data());
    for (std::int64_t i = 0; i < kN; ++i) global_max[i] = std::max(global_max[i], part[i]);
  }
  for (int shard = 0; shard < 2; ++shard) {
    std::vector<float> part_sum(kN), part_target(kN);
    cpu::cross_entropy_local_sum_exp(shard_logits[shard].data(), kN, kRows[shard],
                                     global_max.data(), part_sum.data());
    cpu::cross_entropy_target_logit(shard_logits[shard].data(), kN, kRows[shard], kTokens.data(),
                                    kOffset[shard], part_target.data());
    for (std::int64_t i = 0; i < kN; ++i) {
      global_sum[i] += part_sum[i];
      global_target[i] += part_target[i];
    }
  }
  std::vector<float> sharded_loss(kN);
  cpu::cross_entropy_loss(global_max.data(), global_sum.data(), global_target.data(), kN,
                          sharded_loss.data());
  EXPECT_TRUE(all_near(sharded_loss, loss, kForwardRtol, kForwardAtol));

  for (int shard = 0; shard < 2; ++shard) {
    std::vector<float> dpart(kN * kRows[shard]);
    cpu::cross_entropy_backward(shard_logits[shard].data(), kN, kRows[shard], kTokens.data(),
                                kOffset[shard], global_max.data(), global_sum.data(), scale,
                                dpart.data());
    std::vector<float> expected;
    for (std::int64_t i = 0; i < kN; ++i) {
      const auto row = dfull.begin() + i * kVocab + kOffset[shard];
      expected.insert(expected.end(), row, row + kRows[shard]);
    }
    EXPECT_TRUE(all_near(dpart, expected, kForwardRtol, kForwardAtol)) << "shard " << shard;
  }
}

}  // namespace
}  // namespace tandem::kernels
