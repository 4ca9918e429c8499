// cuda::layer_norm and cuda::rms_norm, forward and backward, against the CPU kernels on the same
// inputs; the parameter gradients must accumulate onto what they held.

#include <gtest/gtest.h>

#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/rms_norm.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

// More rows than the column-sum block depth, and columns not a multiple of a warp.
constexpr std::int64_t kRows = 19, kCols = 300;

template <typename T>
class CudaNorm : public CudaTypedTest<T> {};
TYPED_TEST_SUITE(CudaNorm, StorageTypes, StorageTypeNames);

TYPED_TEST(CudaNorm, LayerNormMatchesCpu) {
  using T = TypeParam;
  constexpr double rtol = Tolerance<T>::kRtol, atol = Tolerance<T>::kAtol;
  const auto x = round_to<T>(random_floats(kRows * kCols, 1, -2.0f, 2.0f));
  const auto gamma = round_to<T>(random_floats(kCols, 2, 0.5f, 1.5f));
  const auto beta = round_to<T>(random_floats(kCols, 3));
  const auto dy = round_to<T>(random_floats(kRows * kCols, 4));
  const auto dgamma0 = round_to<T>(random_floats(kCols, 5));
  const auto dbeta0 = round_to<T>(random_floats(kCols, 6));

  std::vector<float> y(kRows * kCols), mean(kRows), rstd(kRows), dx(kRows * kCols);
  auto dgamma = dgamma0, dbeta = dbeta0;
  cpu::layer_norm_forward(x.data(), gamma.data(), beta.data(), kRows, kCols, 1e-5f, y.data(),
                          mean.data(), rstd.data());
  cpu::layer_norm_backward(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), kRows,
                           kCols, dx.data(), dgamma.data(), dbeta.data());

  DeviceArray<T> d_x(x), d_gamma(gamma), d_beta(beta), d_y(kRows * kCols), d_dy(dy),
      d_dx(kRows * kCols), d_dgamma(dgamma0), d_dbeta(dbeta0);
  DeviceArray<float> d_mean(kRows), d_rstd(kRows);
  cuda::layer_norm_forward(d_x.data(), d_gamma.data(), d_beta.data(), kRows, kCols, 1e-5f,
                           d_y.data(), d_mean.data(), d_rstd.data(), this->stream_);
  cuda::layer_norm_backward(d_dy.data(), d_x.data(), d_gamma.data(), d_mean.data(), d_rstd.data(),
                            kRows, kCols, d_dx.data(), d_dgamma.data(), d_dbeta.data(),
                            this->stream_);
  EXPECT_TRUE(all_near(d_y.to_host(), y, rtol, atol));
  EXPECT_TRUE(all_near(d_mean.to_host(), mean, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_rstd.to_host(), rstd, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_dx.to_host(), dx, rtol, atol));
  EXPECT_TRUE(all_near(d_dgamma.to_host(), dgamma, rtol, atol));
  EXPECT_TRUE(all_near(d_dbeta.to_host(), dbeta, rtol, atol));
}

TYPED_TEST(CudaNorm, RmsNormMatchesCpu) {
  using T = TypeParam;
  constexpr double rtol = Tolerance<T>::kRtol, atol = Tolerance<T>::kAtol;
  const auto x = round_to<T>(random_floats(kRows * kCols, 11, -2.0f, 2.0f));
  const auto gamma = round_to<T>(random_floats(kCols, 12, 0.5f, 1.5f));
  const auto dy = round_to<T>(random_floats(kRows * kCols, 13));
  const auto dgamma0 = round_to<T>(random_floats(kCols, 14));

  std::vector<float> y(kRows * kCols), rstd(kRows), dx(kRows * kCols);
  auto dgamma = dgamma0;
  cpu::rms_norm_forward(x.data(), gamma.data(), kRows, kCols, 1e-6f, y.data(), rstd.data());
  cpu::rms_norm_backward(dy.data(), x.data(), gamma.data(), rstd.data(), kRows, kCols, dx.data(),
                         dgamma.data());

  DeviceArray<T> d_x(x), d_gamma(gamma), d_y(kRows * kCols), d_dy(dy), d_dx(kRows * kCols),
      d_dgamma(dgamma0);
  DeviceArray<float> d_rstd(kRows);
  cuda::rms_norm_forward(d_x.data(), d_gamma.data(), kRows, kCols, 1e-6f, d_y.data(), d_rstd.data(),
                         this->stream_);
  cuda::rms_norm_backward(d_dy.data(), d_x.data(), d_gamma.data(), d_rstd.data(), kRows, kCols,
                          d_dx.data(), d_dgamma.data(), this->stream_);
  EXPECT_TRUE(all_near(d_y.to_host(), y, rtol, atol));
  EXPECT_TRUE(all_near(d_rstd.to_host(), rstd, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_dx.to_host(), dx, rtol, atol));
  EXPECT_TRUE(all_near(d_dgamma.to_host(), dgamma, rtol, atol));
}

}  // namespace
}  // namespace tandem::kernels
