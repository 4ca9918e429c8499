// cuda::attention against cpu::attention on the same inputs, Q/K/V and dQ/dK/dV as column slices
// of fused buffers; grouped-query heads, a sequence longer than a warp and a head_dim that is not
// a multiple of 32. The backward runs with stored probabilities and with recomputed ones.

#include <gtest/gtest.h>

#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kBatch = 2, kSeq = 37, kHeads = 4, kKvHeads = 2, kHeadDim = 40;
constexpr std::int64_t kQCols = kHeads * kHeadDim, kKvCols = kKvHeads * kHeadDim;
constexpr std::int64_t kLd = kQCols + 2 * kKvCols, kTokens = kBatch * kSeq;
constexpr std::int64_t kLse = kBatch * kHeads * kSeq, kProbs = kLse * kSeq;

template <typename T>
class CudaAttention : public CudaTypedTest<T> {};
TYPED_TEST_SUITE(CudaAttention, StorageTypes, StorageTypeNames);

TYPED_TEST(CudaAttention, ForwardAndBackwardMatchCpu) {
  using T = TypeParam;
  constexpr double rtol = Tolerance<T>::kRtol, atol = Tolerance<T>::kAtol;
  const auto qkv = round_to<T>(random_floats(kTokens * kLd, 1, -1.5f, 1.5f));
  const auto dout = round_to<T>(random_floats(kTokens * kQCols, 2));

  std::vector<float> out(kTokens * kQCols), lse(kLse), probs(kProbs), dqkv(kTokens * kLd);
  cpu::attention_forward(qkv.data(), kLd, qkv.data() + kQCols, kLd, qkv.data() + kQCols + kKvCols,
                         kLd, kBatch, kSeq, kHeads, kKvHeads, kHeadDim, out.data(), lse.data(),
                         probs.data());
  // The GPU backward reads out and probs as stored, so the CPU one gets them rounded alike.
  const auto out_stored = round_to<T>(out), probs_stored = round_to<T>(probs);
  cpu::attention_backward(qkv.data(), kLd, qkv.data() + kQCols, kLd, qkv.data() + kQCols + kKvCols,
                          kLd, out_stored.data(), dout.data(), lse.data(), probs_stored.data(),
                          kBatch, kSeq, kHeads, kKvHeads, kHeadDim, dqkv.data(), kLd,
                          dqkv.data() + kQCols, kLd, dqkv.data() + kQCols + kKvCols, kLd);

  DeviceArray<T> d_qkv(qkv), d_out(kTokens * kQCols), d_probs(kProbs), d_dout(dout),
      d_dqkv(kTokens * kLd);
  DeviceArray<float> d_lse(kLse);
  T* q = d_qkv.data();
  cuda::attention_forward(q, kLd, q + kQCols, kLd, q + kQCols + kKvCols, kLd, kBatch, kSeq, kHeads,
                          kKvHeads, kHeadDim, d_out.data(), d_lse.data(), d_probs.data(),
                          this->stream_);
  EXPECT_TRUE(all_near(d_out.to_host(), out, rtol, atol));
  EXPECT_TRUE(all_near(d_lse.to_host(), lse, 1e-4, 1e-4));
  EXPECT_TRUE(all_near(d_probs.to_host(), probs, rtol, atol));

  for (T* stored_probs : {d_probs.data(), static_cast<T*>(nullptr)}) {
    T* dq = d_dqkv.data();
    cuda::attention_backward(q, kLd, q + kQCols, kLd, q + kQCols + kKvCols, kLd, d_out.data(),
                             d_dout.data(), d_lse.data(), stored_probs, kBatch, kSeq, kHeads,
                             kKvHeads, kHeadDim, dq, kLd, dq + kQCols, kLd, dq + kQCols + kKvCols,
                             kLd, this->stream_);
    EXPECT_TRUE(all_near(d_dqkv.to_host(), dqkv, rtol, atol))
        << (stored_probs != nullptr ? "stored probs" : "recomputed probs");
  }
}

}  // namespace
}  // namespace tandem::kernels
