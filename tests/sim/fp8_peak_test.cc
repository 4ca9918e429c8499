// FP8 GEMMs run at the cluster's FP8 peak with the same efficiency model as the other dtypes
// (sim/compute_cost_model.h, sim/kernel_curves.h).
#include <gtest/gtest.h>

#include "sim/compute_cost_model.h"
#include "sim/kernel_curves.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

TEST(Fp8Peak, LargeFp8GemmRunsAtTheFp8Peak) {
  ClusterSpec c = test_cluster(1);
  c.peak_fp8_tflops = 624;  // twice the test cluster's 312 bf16
  c.kernel_launch_us = 4;
  const ComputeCostModel model(c, KernelEfficiency{}, false);
  // The GEMM curve (sim/kernel_curves.h, checked against its cited points in kernel_curves_test.cc)
  // at the FP8 peak: its k_half grows with the machine balance, here 0.867 * 624e12 / 2000e9 = 270.5
  // elements (135.3 at the bf16 peak), so the 8192^3 FP8 GEMM takes 312/624 * (8192 + 270.5) /
  // (8192 + 135.3) = 0.5081 of the bf16 one, launch aside.
  const double eff = gemm_efficiency(gemm_curve(gpu_family(c.gpu_name), 624e12, 2000e9, 0), 1, 8192, 8192, 8192);
  Compute b;
  b.kernel = Kernel::kGemm;
  b.dtype = DType::kBf16;
  b.dims = {8192, 8192, 8192, 0, 0, 0};
  const double bf16_s = model.time_s(b) - 4e-6;
  for (DType t : {DType::kFp8E4M3, DType::kFp8E5M2}) {
    Compute g;
    g.kernel = Kernel::kGemm;
    g.dtype = t;
    g.dims = {8192, 8192, 8192, 0, 0, 0};
    const double want = 2.0 * 8192 * 8192 * 8192 / (624e12 * eff) + 4e-6;
    EXPECT_NEAR(model.time_s(g), want, 1e-9 * want) << to_string(t);
    EXPECT_NEAR((model.time_s(g) - 4e-6) / bf16_s, 0.5 * (8192 + 0.867 * 312) / (8192 + 0.867 * 156), 1e-6) << to_string(t);
  }
}

}  // namespace
}  // namespace tandem::sim::testing
