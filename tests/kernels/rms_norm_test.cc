// cpu::rms_norm against a float64 reference; the backward against finite differences of
// L = sum(w * y), with dgamma accumulating onto what it held.

#include "kernels/cpu/rms_norm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kRows = 3, kCols = 7;
constexpr double kEps = 1e-6;

std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& gamma,
                              std::vector<double>* rstd = nullptr) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < kRows; ++r) {
    double sq = 0.0;
    for (std::int64_t c = 0; c < kCols; ++c) sq += x[r * kCols + c] * x[r * kCols + c] / kCols;
    const double rs = 1.0 / std::sqrt(sq + kEps);
    for (std::int64_t c = 0; c < kCols; ++c) y[r * kCols + c] = x[r * kCols + c] * rs * gamma[c];
    if (rstd) rstd->push_back(rs);
  }
  return y;
}

TEST(CpuRmsNorm, ForwardMatchesFloat64Reference) {
  const auto x = random_floats(kRows * kCols, 21, -2.0f, 2.0f);
  const auto gamma = random_floats(kCols, 22, 0.5f, 1.5f);
  std::vector<float> y(kRows * kCols), rstd(kRows);
  cpu::rms_norm_forward(x.data(), gamma.data(), kRows, kCols, kEps, y.data(), rstd.data());
  std::vector<double> ref_rstd;
  const auto ref = reference(to_double(x), to_double(gamma), &ref_rstd);
  EXPECT_TRUE(all_near(y, ref, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(rstd, ref_rstd, kForwardRtol, kForwardAtol));
}

TEST(CpuRmsNorm, BackwardMatchesFiniteDifferencesAndAccumulatesGammaGrad) {
  const auto xf = random_floats(kRows * kCols, 21, -2.0f, 2.0f);
  const auto gf = random_floats(kCols, 22, 0.5f, 1.5f);
  const auto w = to_double(random_floats(kRows * kCols, 23));
  std::vector<float> y(kRows * kCols), rstd(kRows);
  cpu::rms_norm_forward(xf.data(), gf.data(), kRows, kCols, kEps, y.data(), rstd.data());
  const std::vector<float> dy(w.begin(), w.end());
  std::vector<float> dx(kRows * kCols, 99.0f), dgamma(kCols, 0.25f);
  cpu::rms_norm_backward(dy.data(), xf.data(), gf.data(), rstd.data(), kRows, kCols, dx.data(),
                         dgamma.data());

  const auto x = to_double(xf), gamma = to_double(gf);
  const auto num_dx = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(w, reference(v, gamma)); }, x);
  auto num_dgamma = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(w, reference(x, v)); }, gamma);
  for (double& g : num_dgamma) g += 0.25;
  EXPECT_TRUE(all_near(dx, num_dx, kGradRtol, kGradAtol));
  EXPECT_TRUE(all_near(dgamma, num_dgamma, kGradRtol, kGradAtol));
}

}  // namespace
}  // namespace tandem::kernels
