// The compute cost model against hand-computed rooflines (sim/compute_cost_model.h).
#include <gtest/gtest.h>

#include <cmath>

#include "sim/compute_cost_model.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

TEST(ComputeCostModel, LargeGemmIsComputeBound) {
  ClusterSpec c = test_cluster(1);
  c.kernel_launch_us = 4;
  KernelEfficiency e;  // gemm 0.80, k_half 96, 108 SMs for an unknown GPU name
  const ComputeCostModel model(c, e, false);
  Compute g;
  g.kernel = Kernel::kGemm;
  g.dtype = DType::kBf16;
  g.dims = {8192, 8192, 8192, 0, 0, 0};
  // 64 x 64 = 4096 output tiles of 128x128 over 108 SMs: 38 waves, 4096 / (38 * 108) busy.
  const double quantisation = 4096.0 / (38 * 108);
  const double eff = 0.80 * quantisation * 8192 / (8192 + 96);
  const double want = 2.0 * 8192 * 8192 * 8192 / (312e12 * eff) + 4e-6;
  EXPECT_NEAR(model.time_s(g), want, 1e-9 * want);
}

TEST(ComputeCostModel, VectorKernelIsMemoryBound) {
  ClusterSpec c = test_cluster(1);
  KernelEfficiency e;
  const ComputeCostModel model(c, e, false);
  Compute n;
  n.kernel = Kernel::kLayerNorm;
  n.dtype = DType::kBf16;
  n.dims = {4096, 12288, 0, 0, 0, 0};
  // Reads x and writes y (2 bytes each) plus mean and rstd in fp32: 2*2*rows*cols + 8*rows.
  const double bytes = 4.0 * 4096 * 12288 + 8.0 * 4096;
  EXPECT_NEAR(model.time_s(n), bytes / (2000e9 * 0.80), 1e-12);
}

TEST(ComputeCostModel, CalibrationOverridesTheModel) {
  ClusterSpec c = test_cluster(1);
  CalibrationTable t;
  t.add(Kernel::kGemm, DType::kBf16, {64, 64, 64, 0, 0, 0}, 7e-6);
  const ComputeCostModel model(c, KernelEfficiency{}, false, &t);
  Compute g;
  g.kernel = Kernel::kGemm;
  g.dtype = DType::kBf16;
  g.dims = {64, 64, 64, 0, 0, 0};
  EXPECT_EQ(model.time_s(g), 7e-6);
  g.dims = {128, 64, 64, 0, 0, 0};
  EXPECT_NE(model.time_s(g), 7e-6);
}

}  // namespace
}  // namespace tandem::sim::testing
