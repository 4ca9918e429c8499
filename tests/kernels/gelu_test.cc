// cpu::gelu (tanh approximation) against a float64 reference and finite differences.

#include "kernels/cpu/gelu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

double gelu(double x) {
  const double pi = std::acos(-1.0);
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

std::vector<double> reference(const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = gelu(x[i]);
  return y;
}

TEST(CpuGelu, ForwardMatchesFloat64Reference) {
  const auto x = random_floats(17, 41, -4.0f, 4.0f);
  std::vector<float> y(x.size());
  cpu::gelu_forward(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  EXPECT_TRUE(all_near(y, reference(to_double(x)), kForwardRtol, kForwardAtol));
}

TEST(CpuGelu, KnownValues) {
  // gelu(0) = 0, and the tanh form tends to x for large x and to 0 for very negative x.
  const std::vector<float> x = {0.0f, 10.0f, -10.0f};
  std::vector<float> y(3);
  cpu::gelu_forward(x.data(), y.data(), 3);
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], 10.0f);
  EXPECT_NEAR(y[2], 0.0f, 1e-6f);
}

TEST(CpuGelu, BackwardMatchesFiniteDifferences) {
  const auto x = random_floats(17, 42, -4.0f, 4.0f);
  const auto dy = random_floats(17, 43);
  std::vector<float> dx(x.size());
  cpu::gelu_backward(x.data(), dy.data(), dx.data(), static_cast<std::int64_t>(x.size()));
  const auto num = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(to_double(dy), reference(v)); },
      to_double(x));
  EXPECT_TRUE(all_near(dx, num, kGradRtol, kGradAtol));
}

}  // namespace
}  // namespace tandem::kernels
