// FP8 GEMMs run at the cluster's FP8 peak with the same efficiency model as the other dtypes
// (sim/compute_cost_model.h), hand-computed like compute_cost_model_test.cc.
#include <gtest/gtest.h>

#include "sim/compute_cost_model.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

TEST(Fp8Peak, LargeFp8GemmRunsAtTheFp8Peak) {
  ClusterSpec c = test_cluster(1);
  c.peak_fp8_tflops = 624;  // twice the test cluster's 312 bf16
  c.kernel_launch_us = 4;
  const ComputeCostModel model(c, KernelEfficiency{}, false);
  // 64 x 64 output tiles over 108 SMs: 38 waves, as in compute_cost_model_test.cc.
  const double eff = 0.80 * (4096.0 / (38 * 108)) * 8192 / (8192 + 96);
  for (DType t : {DType::kFp8E4M3, DType::kFp8E5M2}) {
    Compute g;
    g.kernel = Kernel::kGemm;
    g.dtype = t;
    g.dims = {8192, 8192, 8192, 0, 0, 0};
    const double want = 2.0 * 8192 * 8192 * 8192 / (624e12 * eff) + 4e-6;
    EXPECT_NEAR(model.time_s(g), want, 1e-9 * want) << to_string(t);
  }
}

}  // namespace
}  // namespace tandem::sim::testing
