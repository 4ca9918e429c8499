// cuda::adamw_step against cpu::adamw_step over three steps: the fp32 variant, and the mixed one
// that reads a bf16 gradient and writes a bf16 copy of the updated weights.

#include <gtest/gtest.h>

#include "kernels/cpu/adamw.h"
#include "kernels/cuda/adamw.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kN = 5000;
constexpr float kLr = 1e-3f, kBeta1 = 0.9f, kBeta2 = 0.95f, kEps = 1e-8f, kDecay = 0.1f;

TEST_F(CudaTest, AdamWMatchesCpu) {
  auto param = random_floats(kN, 1);
  std::vector<float> m(kN, 0.0f), v(kN, 0.0f);
  DeviceArray<float> d_param(param), d_m(m), d_v(v);
  for (std::int64_t step = 1; step <= 3; ++step) {
    const auto grad = random_floats(kN, 10 + static_cast<std::uint32_t>(step));
    DeviceArray<float> d_grad(grad);
    cpu::adamw_step(param.data(), grad.data(), m.data(), v.data(), kN, kLr, kBeta1, kBeta2, kEps,
                    kDecay, step);
    cuda::adamw_step(d_param.data(), d_grad.data(), d_m.data(), d_v.data(), kN, kLr, kBeta1, kBeta2,
                     kEps, kDecay, step, stream_);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
  EXPECT_TRUE(all_near(d_param.to_host(), param, 1e-5, 1e-6));
  EXPECT_TRUE(all_near(d_m.to_host(), m, 1e-5, 1e-6));
  EXPECT_TRUE(all_near(d_v.to_host(), v, 1e-5, 1e-7));
}

TEST_F(CudaTest, AdamWMixedPrecisionReadsBf16GradAndWritesBf16Copy) {
  auto param = random_floats(kN, 2);
  std::vector<float> m(kN, 0.0f), v(kN, 0.0f);
  DeviceArray<float> d_param(param), d_m(m), d_v(v);
  DeviceArray<__nv_bfloat16> d_copy(kN);
  for (std::int64_t step = 1; step <= 3; ++step) {
    const auto grad =
        round_to<__nv_bfloat16>(random_floats(kN, 20 + static_cast<std::uint32_t>(step)));
    DeviceArray<__nv_bfloat16> d_grad(grad);
    cpu::adamw_step(param.data(), grad.data(), m.data(), v.data(), kN, kLr, kBeta1, kBeta2, kEps,
                    kDecay, step);
    cuda::adamw_step(d_param.data(), d_grad.data(), d_m.data(), d_v.data(), kN, kLr, kBeta1, kBeta2,
                     kEps, kDecay, step, d_copy.data(), stream_);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
  const auto master = d_param.to_host();
  EXPECT_TRUE(all_near(master, param, 1e-5, 1e-6));
  EXPECT_EQ(d_copy.to_host(), round_to<__nv_bfloat16>(master));
}

// bf16 parameters and moments, no master: each step is the float update of the stored (bf16)
// values, every one of the three rounded to bf16 when written. The reference: cpu::adamw_step on
// float copies of the stored values, one element at a time, rounded the same way after each step.
TEST_F(CudaTest, AdamWBf16StateRoundsParamAndMomentsEachStep) {
  auto param = round_to<__nv_bfloat16>(random_floats(kN, 3));
  std::vector<float> m(kN, 0.0f), v(kN, 0.0f);
  DeviceArray<__nv_bfloat16> d_param(param), d_m(m), d_v(v);
  for (std::int64_t step = 1; step <= 3; ++step) {
    const auto grad = round_to<__nv_bfloat16>(random_floats(kN, 30 + static_cast<std::uint32_t>(step)));
    DeviceArray<__nv_bfloat16> d_grad(grad);
    cpu::adamw_step(param.data(), grad.data(), m.data(), v.data(), kN, kLr, kBeta1, kBeta2, kEps,
                    kDecay, step);
    param = round_to<__nv_bfloat16>(param);
    m = round_to<__nv_bfloat16>(m);
    v = round_to<__nv_bfloat16>(v);
    cuda::adamw_step(d_param.data(), d_grad.data(), d_m.data(), d_v.data(), kN, kLr, kBeta1, kBeta2,
                     kEps, kDecay, step, stream_);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
  // The float arithmetic of the two may differ in the last bit (fused multiply-adds), which can
  // flip a rounding to bf16: one bf16 ulp (2^-8 relative) of slack.
  EXPECT_TRUE(all_near(d_param.to_host(), param, 1.0 / 128, 1e-6));
  EXPECT_TRUE(all_near(d_m.to_host(), m, 1.0 / 128, 1e-6));
  EXPECT_TRUE(all_near(d_v.to_host(), v, 1.0 / 128, 1e-8));
}

}  // namespace
}  // namespace tandem::kernels
