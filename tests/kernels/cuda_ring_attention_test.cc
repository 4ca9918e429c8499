// cuda::ring_attention_* against cpu::ring_attention_* on the same inputs, every mode, the
// forward both written and merged, K/V read from a fused QKV row (the local step) and from a packed
// block (the others); and kv_pack / kv_unpack against the column slices they copy. Skips without
// a CUDA device.
#include <gtest/gtest.h>

#include "kernels/cpu/ring_attention.h"
#include "kernels/cuda/ring_attention.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kBatch = 2, kChunk = 19, kHeads = 4, kKvHeads = 2, kHeadDim = 40;
constexpr std::int64_t kRows = 2 * kChunk, kQCols = kHeads * kHeadDim, kKvCols = kKvHeads * kHeadDim;
constexpr std::int64_t kLd = kQCols + 2 * kKvCols, kTokens = kBatch * kRows, kLse = kBatch * kHeads * kRows;

template <typename T>
class CudaRingAttention : public CudaTypedTest<T> {};
TYPED_TEST_SUITE(CudaRingAttention, StorageTypes, StorageTypeNames);

TYPED_TEST(CudaRingAttention, EveryModeMatchesCpu) {
  using T = TypeParam;
  constexpr double rtol = Tolerance<T>::kRtol, atol = Tolerance<T>::kAtol;
  const auto qkv = round_to<T>(random_floats(kTokens * kLd, 1, -1.5f, 1.5f));
  const auto block = round_to<T>(random_floats(kTokens * 2 * kKvCols, 2, -1.5f, 1.5f));
  const auto dout = round_to<T>(random_floats(kTokens * kQCols, 3));
  DeviceArray<T> d_qkv(qkv), d_block(block), d_dout(dout), d_out(kTokens * kQCols), d_dqkv(kTokens * kLd);
  DeviceArray<float> d_lse(kLse), d_dkv(std::vector<float>(kTokens * 2 * kKvCols, 0.0f));
  std::vector<float> out(kTokens * kQCols), lse(kLse), dqkv(kTokens * kLd, 0.0f), dkv(kTokens * 2 * kKvCols, 0.0f);
  for (int mode = 0; mode < 3; ++mode) {
    const cpu::RingBlock b{kBatch, kChunk, kHeads, kKvHeads, kHeadDim, mode};
    const bool local = mode == 0;
    const float* k = local ? qkv.data() + kQCols : block.data();
    const float* v = local ? qkv.data() + kQCols + kKvCols : block.data() + kKvCols;
    const std::int64_t kv_ld = local ? kLd : 2 * kKvCols;
    cpu::ring_attention_forward(qkv.data(), kLd, k, kv_ld, v, kv_ld, b, !local, out.data(), lse.data());
    T* q = d_qkv.data();
    const T* dk = local ? q + kQCols : d_block.data();
    const T* dv = local ? q + kQCols + kKvCols : d_block.data() + kKvCols;
    cuda::ring_attention_forward<T>(q, kLd, dk, kv_ld, dv, kv_ld, b, !local, d_out.data(), d_lse.data(), this->stream_);
    EXPECT_TRUE(all_near(d_out.to_host(), to_double(out), rtol, atol)) << "mode " << mode;
    EXPECT_TRUE(all_near(d_lse.to_host(), to_double(lse), 1e-4, 1e-4)) << "mode " << mode;
    const auto out_stored = round_to<T>(out);
    cpu::ring_attention_backward(qkv.data(), kLd, k, kv_ld, v, kv_ld, out_stored.data(), dout.data(), lse.data(), b,
                                 dqkv.data(), kLd, dkv.data(), 2 * kKvCols, dkv.data() + kKvCols, 2 * kKvCols);
    cuda::ring_attention_backward<T>(q, kLd, dk, kv_ld, dv, kv_ld, d_out.data(), d_dout.data(), d_lse.data(), b,
                                     d_dqkv.data(), kLd, d_dkv.data(), 2 * kKvCols, d_dkv.data() + kKvCols,
                                     2 * kKvCols, this->stream_);
    EXPECT_TRUE(all_near(d_dkv.to_host(), to_double(dkv), 1e-3, 1e-3)) << "mode " << mode;
  }
  // dq accumulated in T over the three modes: compare at bf16's tolerance for both types.
  const auto got = d_dqkv.to_host();
  std::vector<float> got_q, want_q;
  for (std::int64_t r = 0; r < kTokens; ++r)
    for (std::int64_t c = 0; c < kQCols; ++c) got_q.push_back(got[r * kLd + c]), want_q.push_back(dqkv[r * kLd + c]);
  EXPECT_TRUE(all_near(got_q, to_double(round_to<T>(want_q)), 5e-2, 5e-2));
}

TYPED_TEST(CudaRingAttention, KvPackAndUnpackCopyTheKvColumns) {
  using T = TypeParam;
  const auto qkv = round_to<T>(random_floats(kTokens * kLd, 4));
  DeviceArray<T> d_qkv(qkv), d_kv(kTokens * 2 * kKvCols);
  cuda::kv_pack<T>(d_qkv.data(), kTokens, kQCols, kKvCols, d_kv.data(), this->stream_);
  std::vector<float> kv(kTokens * 2 * kKvCols);
  cpu::kv_pack(qkv.data(), kTokens, kQCols, kKvCols, kv.data());
  EXPECT_TRUE(all_near(d_kv.to_host(), to_double(kv), 0, 0));
  const auto dkv = round_to<T>(random_floats(kTokens * 2 * kKvCols, 5));
  DeviceArray<float> d_dkv(dkv);
  cuda::kv_unpack<T>(d_dkv.data(), kTokens, kQCols, kKvCols, d_qkv.data(), this->stream_);
  std::vector<float> want = qkv;
  cpu::kv_unpack(dkv.data(), kTokens, kQCols, kKvCols, want.data());
  EXPECT_TRUE(all_near(d_qkv.to_host(), to_double(want), 0, 0));
}

}  // namespace
}  // namespace tandem::kernels
