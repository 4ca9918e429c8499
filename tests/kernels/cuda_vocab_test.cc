// cuda::embedding and cuda::cross_entropy against the CPU kernels on the same inputs, on the
// second of two vocabulary shards (so in-shard and out-of-shard tokens both occur).

#include <gtest/gtest.h>

#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/embedding.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kN = 23, kOffset = 500, kRows = 600, kCols = 70;
// Tokens of a 1100-word vocabulary; this shard holds [500, 1100). 777 repeats.
const std::vector<std::int32_t> kTokens = {3,    777, 1099, 500,  12,  777, 499, 640,
                                           1000, 777, 0,    501,  999, 250, 777, 600,
                                           700,  800, 900,  1050, 42,  510, 777};

template <typename T>
class CudaVocab : public CudaTypedTest<T> {};
TYPED_TEST_SUITE(CudaVocab, StorageTypes, StorageTypeNames);

TYPED_TEST(CudaVocab, EmbeddingShardMatchesCpu) {
  using T = TypeParam;
  const auto table = round_to<T>(random_floats(kRows * kCols, 1));
  const auto dout = round_to<T>(random_floats(kN * kCols, 2));
  const auto dtable0 = round_to<T>(random_floats(kRows * kCols, 3));
  std::vector<float> out(kN * kCols);
  auto dtable = dtable0;
  cpu::embedding_forward(kTokens.data(), kN, table.data(), kRows, kCols, kOffset, out.data());
  cpu::embedding_backward(kTokens.data(), kN, dout.data(), kRows, kCols, kOffset, dtable.data());
  DeviceArray<std::int32_t> d_tokens(kTokens);
  DeviceArray<T> d_table(table), d_out(kN * kCols), d_dout(dout), d_dtable(dtable0);
  cuda::embedding_forward(d_tokens.data(), kN, d_table.data(), kRows, kCols, kOffset, d_out.data(),
                          this->stream_);
  cuda::embedding_backward(d_tokens.data(), kN, d_dout.data(), kRows, kCols, kOffset,
                           d_dtable.data(), this->stream_);
  EXPECT_EQ(d_out.to_host(), out);
  EXPECT_TRUE(all_near(d_dtable.to_host(), dtable, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
}

TYPED_TEST(CudaVocab, CrossEntropyPiecesMatchCpu) {
  using T = TypeParam;
  const auto logits = round_to<T>(random_floats(kN * kRows, 4, -8.0f, 8.0f));
  std::vector<float> max(kN), sum_exp(kN), target(kN), loss(kN), dlogits(kN * kRows);
  cpu::cross_entropy_local_max(logits.data(), kN, kRows, max.data());
  cpu::cross_entropy_local_sum_exp(logits.data(), kN, kRows, max.data(), sum_exp.data());
  cpu::cross_entropy_target_logit(logits.data(), kN, kRows, kTokens.data(), kOffset, target.data());
  cpu::cross_entropy_loss(max.data(), sum_exp.data(), target.data(), kN, loss.data());
  cpu::cross_entropy_backward(logits.data(), kN, kRows, kTokens.data(), kOffset, max.data(),
                              sum_exp.data(), 0.25f, dlogits.data());

  DeviceArray<std::int32_t> d_targets(kTokens);
  DeviceArray<T> d_logits(logits), d_dlogits(kN * kRows);
  DeviceArray<float> d_max(kN), d_sum(kN), d_target(kN), d_loss(kN);
  cuda::cross_entropy_local_max(d_logits.data(), kN, kRows, d_max.data(), this->stream_);
  cuda::cross_entropy_local_sum_exp(d_logits.data(), kN, kRows, d_max.data(), d_sum.data(),
                                    this->stream_);
  cuda::cross_entropy_target_logit(d_logits.data(), kN, kRows, d_targets.data(), kOffset,
                                   d_target.data(), this->stream_);
  cuda::cross_entropy_loss(d_max.data(), d_sum.data(), d_target.data(), kN, d_loss.data(),
                           this->stream_);
  cuda::cross_entropy_backward(d_logits.data(), kN, kRows, d_targets.data(), kOffset, d_max.data(),
                               d_sum.data(), 0.25f, d_dlogits.data(), this->stream_);
  // The statistics are float whatever the storage, and the inputs are identical.
  EXPECT_EQ(d_max.to_host(), max);
  EXPECT_EQ(d_target.to_host(), target);
  EXPECT_TRUE(all_near(d_sum.to_host(), sum_exp, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_loss.to_host(), loss, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_dlogits.to_host(), dlogits, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
}

}  // namespace
}  // namespace tandem::kernels
