// cpu::embedding on one shard holding the whole vocabulary: a row lookup forward, and a backward
// that adds repeated tokens up and accumulates onto what dtable held.

#include "kernels/cpu/embedding.h"

#include <gtest/gtest.h>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kVocab = 7, kCols = 3;

TEST(CpuEmbedding, ForwardCopiesTheTokensRows) {
  const auto table = random_floats(kVocab * kCols, 71);
  const std::vector<std::int32_t> tokens = {4, 0, 6, 4};
  std::vector<float> out(tokens.size() * kCols);
  cpu::embedding_forward(tokens.data(), 4, table.data(), kVocab, kCols, 0, out.data());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    for (std::int64_t c = 0; c < kCols; ++c) {
      EXPECT_EQ(out[i * kCols + c], table[tokens[i] * kCols + c]) << "token " << i << " col " << c;
    }
  }
}

TEST(CpuEmbedding, BackwardAddsRepeatedTokensOntoDtable) {
  const std::vector<std::int32_t> tokens = {4, 0, 6, 4};
  const auto dout = random_floats(tokens.size() * kCols, 72);
  std::vector<float> dtable(kVocab * kCols, 1.0f);
  cpu::embedding_backward(tokens.data(), 4, dout.data(), kVocab, kCols, 0, dtable.data());
  std::vector<double> expected(kVocab * kCols, 1.0);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    for (std::int64_t c = 0; c < kCols; ++c) expected[tokens[i] * kCols + c] += dout[i * kCols + c];
  }
  EXPECT_TRUE(all_near(dtable, expected, kForwardRtol, kForwardAtol));
}

TEST(CpuEmbedding, OutOfShardTokensGiveZerosAndNoGradient) {
  const auto table = random_floats(2 * kCols, 73);  // this shard holds vocabulary rows 3 and 4
  const std::vector<std::int32_t> tokens = {2, 3, 5};
  std::vector<float> out(3 * kCols, 9.0f);
  cpu::embedding_forward(tokens.data(), 3, table.data(), 2, kCols, 3, out.data());
  const std::vector<float> expected = {0, 0, 0, table[0], table[1], table[2], 0, 0, 0};
  EXPECT_EQ(out, expected);

  const std::vector<float> dout(3 * kCols, 1.0f);
  std::vector<float> dtable(2 * kCols, 0.0f);
  cpu::embedding_backward(tokens.data(), 3, dout.data(), 2, kCols, 3, dtable.data());
  EXPECT_EQ(dtable, (std::vector<float>{1, 1, 1, 0, 0, 0}));
}

}  // namespace
}  // namespace tandem::kernels
