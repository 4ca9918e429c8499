// cpu::layer_norm against a float64 reference; the backward against finite differences of
// L = sum(w * y), with dgamma/dbeta accumulating onto what they held.

#include "kernels/cpu/layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kRows = 3, kCols = 7;
constexpr double kEps = 1e-5;

std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& gamma,
                              const std::vector<double>& beta, std::vector<double>* mean = nullptr,
                              std::vector<double>* rstd = nullptr) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < kRows; ++r) {
    double mu = 0.0, var = 0.0;
    for (std::int64_t c = 0; c < kCols; ++c) mu += x[r * kCols + c] / kCols;
    for (std::int64_t c = 0; c < kCols; ++c) var += std::pow(x[r * kCols + c] - mu, 2) / kCols;
    const double rs = 1.0 / std::sqrt(var + kEps);
    for (std::int64_t c = 0; c < kCols; ++c) {
      y[r * kCols + c] = (x[r * kCols + c] - mu) * rs * gamma[c] + beta[c];
    }
    if (mean) mean->push_back(mu);
    if (rstd) rstd->push_back(rs);
  }
  return y;
}

struct Inputs {
  std::vector<float> x = random_floats(kRows * kCols, 11, -2.0f, 2.0f);
  std::vector<float> gamma = random_floats(kCols, 12, 0.5f, 1.5f);
  std::vector<float> beta = random_floats(kCols, 13);
};

TEST(CpuLayerNorm, ForwardMatchesFloat64Reference) {
  const Inputs in;
  std::vector<float> y(kRows * kCols), mean(kRows), rstd(kRows);
  cpu::layer_norm_forward(in.x.data(), in.gamma.data(), in.beta.data(), kRows, kCols, kEps,
                          y.data(), mean.data(), rstd.data());
  std::vector<double> ref_mean, ref_rstd;
  const auto ref =
      reference(to_double(in.x), to_double(in.gamma), to_double(in.beta), &ref_mean, &ref_rstd);
  EXPECT_TRUE(all_near(y, ref, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(mean, ref_mean, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(rstd, ref_rstd, kForwardRtol, kForwardAtol));
}

TEST(CpuLayerNorm, BackwardMatchesFiniteDifferencesAndAccumulatesParamGrads) {
  const Inputs in;
  const auto w = to_double(random_floats(kRows * kCols, 14));
  std::vector<float> y(kRows * kCols), mean(kRows), rstd(kRows);
  cpu::layer_norm_forward(in.x.data(), in.gamma.data(), in.beta.data(), kRows, kCols, kEps,
                          y.data(), mean.data(), rstd.data());
  const std::vector<float> dy(w.begin(), w.end());
  std::vector<float> dx(kRows * kCols, 99.0f), dgamma(kCols, 0.25f), dbeta(kCols, -0.5f);
  cpu::layer_norm_backward(dy.data(), in.x.data(), in.gamma.data(), mean.data(), rstd.data(), kRows,
                           kCols, dx.data(), dgamma.data(), dbeta.data());

  const auto x = to_double(in.x), gamma = to_double(in.gamma), beta = to_double(in.beta);
  const auto num_dx = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(w, reference(v, gamma, beta)); }, x);
  auto num_dgamma = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(w, reference(x, v, beta)); }, gamma);
  auto num_dbeta = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(w, reference(x, gamma, v)); }, beta);
  for (double& g : num_dgamma) g += 0.25;
  for (double& g : num_dbeta) g -= 0.5;
  EXPECT_TRUE(all_near(dx, num_dx, kGradRtol, kGradAtol));
  EXPECT_TRUE(all_near(dgamma, num_dgamma, kGradRtol, kGradAtol));
  EXPECT_TRUE(all_near(dbeta, num_dbeta, kGradRtol, kGradAtol));
}

}  // namespace
}  // namespace tandem::kernels
