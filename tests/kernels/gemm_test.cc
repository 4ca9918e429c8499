// cpu::gemm against a float64 triple loop, for every transposition, with padded leading
// dimensions and beta accumulation.

#include "kernels/cpu/gemm.h"

#include <gtest/gtest.h>

#include <limits>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using test::all_near;
using test::random_floats;

struct Case {
  bool trans_a;
  bool trans_b;
};

class CpuGemm : public ::testing::TestWithParam<Case> {};

TEST_P(CpuGemm, MatchesFloat64ReferenceWithPaddedRowsAndBeta) {
  const auto [trans_a, trans_b] = GetParam();
  const std::int64_t m = 3, n = 5, k = 7, pad = 2;
  // Stored shapes: A is [m,k] or [k,m], B is [k,n] or [n,k]; each row padded by `pad` elements.
  const std::int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const std::int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  const std::int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
  const auto a = random_floats(a_rows * lda, 1);
  const auto b = random_floats(b_rows * ldb, 2);
  auto c = random_floats(m * ldc, 3);
  const float alpha = 0.75f, beta = 0.5f;

  std::vector<double> expected(c.begin(), c.end());
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const double bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        sum += av * bv;
      }
      expected[i * ldc + j] = alpha * sum + beta * c[i * ldc + j];
    }
  }
  cpu::gemm(trans_a, trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  EXPECT_TRUE(all_near(c, expected, test::kForwardRtol, test::kForwardAtol));  // pads kept too
}

INSTANTIATE_TEST_SUITE_P(AllTranspositions, CpuGemm,
                         ::testing::Values(Case{false, false}, Case{true, false}, Case{false, true},
                                           Case{true, true}),
                         [](const auto& info) {
                           return std::string(info.param.trans_a ? "At" : "A") +
                                  (info.param.trans_b ? "Bt" : "B");
                         });

TEST(CpuGemmEdges, BetaZeroOverwritesWithoutReading) {
  const std::vector<float> a = {1, 2, 3, 4};  // [2,2]
  const std::vector<float> b = {5, 6, 7, 8};
  std::vector<float> c(4, std::numeric_limits<float>::quiet_NaN());
  cpu::gemm(false, false, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{19, 22, 43, 50}));
}

TEST(CpuGemmEdges, EmptyInnerDimensionScalesC) {
  std::vector<float> c = {1, 2, 3, 4, 5, 6};
  cpu::gemm(false, false, 2, 3, 0, 1.0f, nullptr, 1, nullptr, 3, 2.0f, c.data(), 3);
  EXPECT_EQ(c, (std::vector<float>{2, 4, 6, 8, 10, 12}));
}

}  // namespace
}  // namespace tandem::kernels
