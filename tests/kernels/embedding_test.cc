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

// A grid's vocabulary-parallel embedding (shared/tp2d_embedding_head.cc, Colossal-AI's
// VocabParallelEmbedding2D / 3D): q ranks each look every token of q batch blocks up in their
// own vocabulary rows (zero outside), the partial outputs are summed and block b goes to rank b
// (a reduce-scatter); backward each rank's rows take the gathered dx of every token in them. The
// sum over shards must equal the whole-table lookup, and the shards' gradients the whole-table
// gradient's rows, against a float64 reference.
TEST(CpuEmbedding, VocabularyShardsSummedEqualTheWholeTableLookup) {
  constexpr std::int64_t q = 3, rows = 4, vocab = q * rows, blocks = q, per_block = 5, n = blocks * per_block;
  const auto table = random_floats(vocab * kCols, 74);
  const std::vector<std::int32_t> tokens = {0, 11, 4, 4, 7, 3, 8, 2, 9, 10, 5, 1, 6, 11, 0};
  const auto dx = random_floats(n * kCols, 75);
  std::vector<double> sum(n * kCols, 0.0);
  std::vector<float> dtable(vocab * kCols, 0.0f);
  for (std::int64_t r = 0; r < q; ++r) {  // rank r holds rows r*rows .. (r+1)*rows - 1
    std::vector<float> out(n * kCols, 7.0f);
    cpu::embedding_forward(tokens.data(), n, table.data() + r * rows * kCols, rows, kCols, r * rows, out.data());
    for (std::int64_t i = 0; i < n * kCols; ++i) sum[i] += out[i];
    cpu::embedding_backward(tokens.data(), n, dx.data(), rows, kCols, r * rows, dtable.data() + r * rows * kCols);
  }
  std::vector<double> want(n * kCols), want_grad(vocab * kCols, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < kCols; ++c) {
      want[i * kCols + c] = table[tokens[i] * kCols + c];
      want_grad[tokens[i] * kCols + c] += double(dx[i * kCols + c]);
    }
  std::vector<float> got(sum.begin(), sum.end());
  EXPECT_TRUE(all_near(got, want, kForwardRtol, kForwardAtol));  // each block b of it: rank b's output
  EXPECT_TRUE(all_near(dtable, want_grad, kForwardRtol, kForwardAtol));
}

}  // namespace
}  // namespace tandem::kernels
