// cpu::add, cpu::scale and cpu::accumulate on small vectors, including the in-place residual add.

#include "kernels/cpu/elementwise.h"

#include <gtest/gtest.h>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

TEST(CpuElementwise, AddWritesTheSumAndMayAlias) {
  const std::vector<float> a = {1.0f, -2.0f, 3.5f};
  std::vector<float> b = {0.5f, 2.0f, -1.0f};
  std::vector<float> out(3);
  cpu::add(a.data(), b.data(), out.data(), 3);
  EXPECT_EQ(out, (std::vector<float>{1.5f, 0.0f, 2.5f}));
  cpu::add(a.data(), b.data(), b.data(), 3);  // residual stream updated in place
  EXPECT_EQ(b, out);
}

TEST(CpuElementwise, ScaleMultipliesInPlace) {
  std::vector<float> x = {1.0f, -2.0f, 0.25f};
  cpu::scale(x.data(), -4.0f, 3);
  EXPECT_EQ(x, (std::vector<float>{-4.0f, 8.0f, -1.0f}));
}

TEST(CpuElementwise, AccumulateAddsIntoY) {
  const std::vector<float> x = {1.0f, 2.0f, 3.0f};
  std::vector<float> y = {10.0f, 20.0f, 30.0f};
  cpu::accumulate(x.data(), y.data(), 3);
  cpu::accumulate(x.data(), y.data(), 3);
  EXPECT_EQ(y, (std::vector<float>{12.0f, 24.0f, 36.0f}));
}

TEST(CpuElementwise, LongVectorsMatchFloat64) {
  const auto a = test::random_floats(1001, 61);
  const auto b = test::random_floats(1001, 62);
  std::vector<float> out(1001);
  cpu::add(a.data(), b.data(), out.data(), 1001);
  std::vector<double> expected(1001);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<double>(a[i]) + b[i];
  EXPECT_TRUE(test::all_near(out, expected, test::kForwardRtol, test::kForwardAtol));
}

}  // namespace
}  // namespace tandem::kernels
