// sim/host_compute_model.h: the fit recovers coefficients of points made from known ones, keeps
// coefficients non-negative, scales a single shape by work, and falls back to a class's pooled fit.
#include "sim/host_compute_model.h"

#include <gtest/gtest.h>

namespace tandem::sim {
namespace {

Compute gemm(int64_t m, int64_t n, int64_t k) {
  return Compute{Kernel::kGemm, DType::kFp32, Phase::kForward, 0, -1, -1, {m, n, k, 0, 0, 0}, {}, {}};
}

TEST(HostComputeModel, RecoversExactAffineCoefficients) {
  // time = 5 us + flops / 80 GFLOP/s + bytes / 20 GB/s on four independent (flops, bytes) points.
  const double a = 5e-6, b = 1 / 80e9, c = 1 / 20e9;
  std::vector<std::array<double, 4>> pts;
  for (auto [f, y] : {std::pair{1e6, 3e4}, {8e6, 1e5}, {2e7, 4e5}, {5e5, 9e5}})
    pts.push_back({f, y, a + b * f + c * y, 1});
  const HostFit fit = fit_host_kernels(pts);
  EXPECT_NEAR(fit.fixed_s, a, 1e-12);
  EXPECT_NEAR(fit.s_per_flop, b, 1e-16);
  EXPECT_NEAR(fit.s_per_byte, c, 1e-16);
}

TEST(HostComputeModel, NeverNegative) {
  // Times falling with bytes (a negative slope) cannot be a bandwidth: the fit drops that term.
  // Points (0 flops): bytes 1e3 -> 10 us, 2e3 -> 8 us. Best non-negative: the constant 9 us.
  const HostFit fit = fit_host_kernels({{0, 1e3, 10e-6, 1}, {0, 2e3, 8e-6, 1}});
  EXPECT_GE(fit.s_per_byte, 0);
  EXPECT_NEAR(fit.fixed_s + fit.s_per_byte * 1.5e3, 9e-6, 1e-9);
}

TEST(HostComputeModel, ScalesOneShapeByFlopsAndPoolsMissingKinds) {
  // One GEMM 64x64x64 (2*64^3 = 524288 flops) measured at 10 us: 128x64x64 (twice the flops) 20 us.
  HostComputeModel m({{gemm(64, 64, 64), 10e-6, 3}});
  EXPECT_NEAR(m.time_s(gemm(128, 64, 64)), 20e-6, 1e-12);
  // Attention has flops too: the pooled fit of the flops class (the GEMM's rate) costs it.
  Compute att{Kernel::kAttention, DType::kFp32, Phase::kForward, 0, -1, -1, {2, 32, 2, 2, 16, 0}, {}, {}};
  EXPECT_NEAR(m.time_s(att), att.matmul_flops() * 10e-6 / 524288.0, 1e-12);
  // No kernel without flops was measured: nothing to go on.
  Compute gelu{Kernel::kGelu, DType::kFp32, Phase::kForward, 0, -1, -1, {4096, 0, 0, 0, 0, 0}, {}, {}};
  EXPECT_LT(m.time_s(gelu), 0);
}

}  // namespace
}  // namespace tandem::sim

namespace tandem::sim {
namespace {

TEST(HostComputeModel, CollectiveSizeLaw) {
  // 256 B in 1 ms and 65536 B (256x) in 4 ms: alpha = ln 4 / ln 256 = 0.25; reference at the
  // geometric means (4096 B, 2 ms); 2^20 B (16x 65536) -> 4 ms * 16^0.25 = 8 ms.
  const SizeLaw law = fit_size_law({{256, 1e-3, 1}, {65536, 4e-3, 1}});
  EXPECT_NEAR(law.alpha, 0.25, 1e-12);
  EXPECT_NEAR(law.time_s(1 << 20), 8e-3, 1e-12);
  // One shape: constant (alpha 0); falling times clamp to 0 as well.
  EXPECT_NEAR(fit_size_law({{100, 5e-3, 3}}).time_s(1e6), 5e-3, 1e-15);
  EXPECT_EQ(fit_size_law({{256, 4e-3, 1}, {65536, 1e-3, 1}}).alpha, 0);
}

}  // namespace
}  // namespace tandem::sim

namespace tandem::sim {
namespace {

Compute gemm_of(int64_t m, int64_t n, int64_t k) {
  return Compute{Kernel::kGemm, DType::kFp32, Phase::kForward, 0, -1, -1, {m, n, k, 0, 0, 0}, {}, {}};
}

TEST(HostComputeModel, GemmGridInterpolatesSecondsPerFlopInLogSizes) {
  // 2x1x1 in 4 s: 4 flops, 1 s/flop; 8x1x1 in 64 s: 16 flops, 4 s/flop. m = 4 lies halfway in
  // log2 (1, 2, 3): ln(spf) = (0 + ln 4) / 2 = ln 2, so 2 s/flop x 8 flops = 16 s. Outside the
  // grid the rate of the edge: m = 16 -> 4 s/flop x 32 flops = 128 s; m = 1 -> 1 x 2 = 2 s.
  const GemmGrid g({{2, 1, 1, 4}, {8, 1, 1, 64}});
  EXPECT_NEAR(g.time_s(4, 1, 1), 16, 1e-9);
  EXPECT_NEAR(g.time_s(16, 1, 1), 128, 1e-9);
  EXPECT_NEAR(g.time_s(1, 1, 1), 2, 1e-9);
  EXPECT_LT(GemmGrid().time_s(4, 1, 1), 0);
}

TEST(HostComputeModel, ProbeCostsGemmsOnlyWhenTheRunHadNone) {
  // The probe: 1 s/flop everywhere on a 2x2x2 grid; a GEMM of 4x4x4 (128 flops) -> 128 s.
  std::vector<GemmGridPoint> pts;
  for (double m : {2.0, 8.0})
    for (double n : {2.0, 8.0})
      for (double k : {2.0, 8.0}) pts.push_back({m, n, k, 2 * m * n * k});
  const HostComputeModel probe_only({}, GemmGrid(pts));
  EXPECT_NEAR(probe_only.time_s(gemm_of(4, 4, 4)), 128, 1e-9);
  // The run measured a GEMM of 2x2x2 (16 flops) in 32 s: its own fit (2 s/flop, scaled by work)
  // wins over the probe: 4x4x4 -> 256 s.
  const HostComputeModel with_run({{gemm_of(2, 2, 2), 32, 1}}, GemmGrid(pts));
  EXPECT_NEAR(with_run.time_s(gemm_of(4, 4, 4)), 256, 1e-9);
}

}  // namespace
}  // namespace tandem::sim
