// cuda::layer_norm_* of rows split over ranks (kernels/cuda/split_layer_norm.h) against the CPU
// kernels (kernels/cpu/split_layer_norm.h, themselves tested against a float64 reference) on the
// same inputs: a part of 300 columns of a 600-column row, statistics fed from the CPU.

#include <gtest/gtest.h>

#include "kernels/cpu/split_layer_norm.h"
#include "kernels/cuda/split_layer_norm.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kRows = 19, kCols = 300, kFull = 600;

template <typename T>
class CudaSplitNorm : public CudaTypedTest<T> {};
TYPED_TEST_SUITE(CudaSplitNorm, StorageTypes, StorageTypeNames);

TYPED_TEST(CudaSplitNorm, PartialKernelsMatchCpu) {
  using T = TypeParam;
  constexpr double rtol = Tolerance<T>::kRtol, atol = Tolerance<T>::kAtol;
  const auto x = round_to<T>(random_floats(kRows * kCols, 31, -2.0f, 2.0f));
  const auto gamma = round_to<T>(random_floats(kCols, 32, 0.5f, 1.5f));
  const auto beta = round_to<T>(random_floats(kCols, 33));
  const auto dy = round_to<T>(random_floats(kRows * kCols, 34));
  const auto dgamma0 = round_to<T>(random_floats(kCols, 35));
  const auto dbeta0 = round_to<T>(random_floats(kCols, 36));
  // Full-row statistics as the all-reduce would leave them: any positive variance will do.
  const auto mean = random_floats(kRows, 37, -0.5f, 0.5f);
  const auto var = random_floats(kRows, 38, 0.5f, 2.0f);
  const auto sums = random_floats(2 * kRows, 39);

  std::vector<float> pmean(kRows), pvar(kRows), y(kRows * kCols), rstd(kRows), psums(2 * kRows), dx(kRows * kCols);
  auto dgamma = dgamma0, dbeta = dbeta0;
  cpu::layer_norm_partial_mean(x.data(), kRows, kCols, kFull, pmean.data());
  cpu::layer_norm_partial_var(x.data(), mean.data(), kRows, kCols, kFull, pvar.data());
  cpu::layer_norm_apply(x.data(), gamma.data(), beta.data(), mean.data(), var.data(), kRows, kCols, 1e-5f, y.data(),
                        rstd.data());
  cpu::layer_norm_bwd_partial_sums(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), kRows, kCols, kFull,
                                   psums.data());
  cpu::layer_norm_bwd_apply(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), sums.data(), kRows, kCols,
                            dx.data(), dgamma.data(), dbeta.data());

  DeviceArray<T> d_x(x), d_gamma(gamma), d_beta(beta), d_y(kRows * kCols), d_dy(dy), d_dx(kRows * kCols),
      d_dgamma(dgamma0), d_dbeta(dbeta0);
  DeviceArray<float> d_mean(mean), d_var(var), d_sums(sums), d_pmean(kRows), d_pvar(kRows), d_rstd(kRows),
      d_psums(2 * kRows);
  cuda::layer_norm_partial_mean(d_x.data(), kRows, kCols, kFull, d_pmean.data(), this->stream_);
  cuda::layer_norm_partial_var(d_x.data(), d_mean.data(), kRows, kCols, kFull, d_pvar.data(), this->stream_);
  cuda::layer_norm_apply(d_x.data(), d_gamma.data(), d_beta.data(), d_mean.data(), d_var.data(), kRows, kCols, 1e-5f,
                         d_y.data(), d_rstd.data(), this->stream_);
  // The backward from the CPU's rstd, so that both sides see the same statistics.
  DeviceArray<float> d_rstd_cpu(rstd);
  cuda::layer_norm_bwd_partial_sums(d_dy.data(), d_x.data(), d_gamma.data(), d_mean.data(), d_rstd_cpu.data(), kRows,
                                    kCols, kFull, d_psums.data(), this->stream_);
  cuda::layer_norm_bwd_apply(d_dy.data(), d_x.data(), d_gamma.data(), d_mean.data(), d_rstd_cpu.data(), d_sums.data(),
                             kRows, kCols, d_dx.data(), d_dgamma.data(), d_dbeta.data(), this->stream_);
  EXPECT_TRUE(all_near(d_pmean.to_host(), pmean, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_pvar.to_host(), pvar, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_y.to_host(), y, rtol, atol));
  EXPECT_TRUE(all_near(d_rstd.to_host(), rstd, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_psums.to_host(), psums, 1e-4, 1e-5));
  EXPECT_TRUE(all_near(d_dx.to_host(), dx, rtol, atol));
  EXPECT_TRUE(all_near(d_dgamma.to_host(), dgamma, rtol, atol));
  EXPECT_TRUE(all_near(d_dbeta.to_host(), dbeta, rtol, atol));
}

}  // namespace
}  // namespace tandem::kernels
