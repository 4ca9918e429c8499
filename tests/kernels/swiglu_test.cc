// cpu::swiglu against a float64 reference and finite differences, on x = [gate | linear].

#include "kernels/cpu/swiglu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kRows = 3, kF = 5;

std::vector<double> reference(const std::vector<double>& x) {
  std::vector<double> y(kRows * kF);
  for (std::int64_t r = 0; r < kRows; ++r) {
    for (std::int64_t j = 0; j < kF; ++j) {
      const double a = x[r * 2 * kF + j];
      y[r * kF + j] = a / (1.0 + std::exp(-a)) * x[r * 2 * kF + kF + j];
    }
  }
  return y;
}

TEST(CpuSwiglu, ForwardMatchesFloat64Reference) {
  const auto x = random_floats(kRows * 2 * kF, 51, -3.0f, 3.0f);
  std::vector<float> y(kRows * kF);
  cpu::swiglu_forward(x.data(), kRows, kF, y.data());
  EXPECT_TRUE(all_near(y, reference(to_double(x)), kForwardRtol, kForwardAtol));
}

TEST(CpuSwiglu, BackwardMatchesFiniteDifferences) {
  const auto x = random_floats(kRows * 2 * kF, 52, -3.0f, 3.0f);
  const auto dy = random_floats(kRows * kF, 53);
  std::vector<float> dx(x.size(), 99.0f);
  cpu::swiglu_backward(x.data(), dy.data(), kRows, kF, dx.data());
  const auto num = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(to_double(dy), reference(v)); },
      to_double(x));
  EXPECT_TRUE(all_near(dx, num, kGradRtol, kGradAtol));
}

}  // namespace
}  // namespace tandem::kernels
