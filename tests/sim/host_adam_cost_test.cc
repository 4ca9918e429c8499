// The host optimizer's time from the node's memory bandwidth and cores (sim/host_adam_cost.h).
// Figures by hand: fp16 training moves 2 (gradient in) + 3 x (4 in + 4 out) (fp32 master, m, v)
// + 2 (fp16 parameter out) = 28 bytes per element; Colossal-AI's CPU AdamW issues 11 SIMD
// arithmetic instructions per vector.
#include <gtest/gtest.h>

#include "sim/compute_cost_model.h"
#include "sim/host_adam_cost.h"
#include "tests/sim/sim_test_util.h"

namespace tandem::sim::testing {
namespace {

ClusterSpec host_cluster(int gpus) {
  ClusterSpec c = test_cluster(gpus);
  c.host_memory_bandwidth_gbps = 400;
  c.host_cores = 128;
  c.host_core_ghz = 2;
  c.host_simd_fp32_lanes = 8;
  return c;
}

TEST(HostAdamCost, MemoryBoundOnAFullNode) {
  // 8 ranks share 400 GB/s: 50 GB/s each; 1e9 elements x 28 B = 28 GB -> 0.56 s.
  // Cores: 16 each at 2 GHz; 1e9 / 8 lanes x 11 = 1.375e9 instructions -> 1.375e9 / 32e9 s.
  const HostAdamTime t = host_adam_time(host_cluster(8), 8, 1e9, 28e9);
  EXPECT_NEAR(t.memory_s, 0.56, 1e-12);
  EXPECT_NEAR(t.compute_s, 1.375e9 / 32e9, 1e-12);
  EXPECT_NEAR(t.time_s(), 0.56, 1e-12);
}

TEST(HostAdamCost, OneRankHasTheWholeHost) {
  // One GPU in use: the node's 400 GB/s and 128 cores are its own: 28 GB / 400 GB/s = 0.07 s.
  const ClusterSpec c = host_cluster(1);
  EXPECT_EQ(ranks_on_node(c), 1);
  EXPECT_EQ(ranks_on_node(host_cluster(16)), 8);
  const HostAdamTime t = host_adam_time(c, ranks_on_node(c), 1e9, 28e9);
  EXPECT_NEAR(t.memory_s, 0.07, 1e-12);
  EXPECT_NEAR(t.compute_s, 1.375e9 / (128 * 2e9), 1e-12);
}

TEST(HostAdamCost, FewCoresMakeItComputeBound) {
  // 8 cores for 8 ranks: one thread each at 2 GHz: 1.375e9 / 2e9 = 0.6875 s > 0.56 s of memory.
  ClusterSpec c = host_cluster(8);
  c.host_cores = 8;
  EXPECT_NEAR(host_adam_time(c, 8, 1e9, 28e9).time_s(), 0.6875, 1e-12);
  // No core figures: the memory term alone.
  c.host_cores = 0;
  EXPECT_EQ(host_adam_time(c, 8, 1e9, 28e9).compute_s, 0.0);
}

Compute host_adam(int64_t n) {
  Compute c;
  c.kernel = Kernel::kAdam;
  c.dtype = DType::kFp16;
  c.phase = Phase::kOptimizer;
  c.dims = {n, 0, 0, 0, 0, 0};
  return c;
}

TEST(HostAdamCost, TheCostModelUsesTheClusterFigures) {
  const Compute c = host_adam(1000000000);
  ASSERT_DOUBLE_EQ(c.bytes_moved(), 28e9);  // the 28 B per element above
  const ComputeCostModel with(host_cluster(8), KernelEfficiency{}, false);
  EXPECT_NEAR(with.time_s(c, true), 0.56, 1e-12);
  // A cluster without host figures keeps the former default: 200 GB/s over the node's 8 GPUs.
  const ComputeCostModel without(test_cluster(8), KernelEfficiency{}, false);
  EXPECT_NEAR(without.time_s(c, true), 28e9 / (200e9 / 8), 1e-12);
}

}  // namespace
}  // namespace tandem::sim::testing
