// A host copy's bandwidth with the node's GPUs copying at once (shared/host_copy_rate.h), by hand
// from the cluster presets' figures (docs/offload.md "PCIe and host memory"), and the roofline
// cost of a Copy task at that rate.
#include <gtest/gtest.h>

#include "shared/host_copy_rate.h"
#include "shared/roofline_cost.h"
#include "tests/shared/schedule_test_util.h"

namespace tandem {
namespace {

TEST(HostCopyRate, DgxA100SharesASwitchUplinkBetweenTwoGpus) {
  // dgx-a100-80g: PCIe 32 GB/s per GPU, 2 GPUs per switch on a 32 GB/s uplink, 409.6 GB/s of host
  // memory. All 8 GPUs copying: min(32, 32 / 2, 409.6 / 8) = 16 GB/s; derated by 0.87 on the PCIe
  // links only: min(27.84, 13.92, 51.2) = 13.92 GB/s. One GPU alone: its own 32 GB/s.
  const ClusterSpec c = testing::tiny({"cluster.gpus=8", "strategy.micro_batch=1"}).cluster;
  ASSERT_EQ(c.gpus_per_pcie_switch, 2);
  EXPECT_DOUBLE_EQ(host_copy_bytes_per_s(c, 8), 16e9);
  EXPECT_NEAR(host_copy_bytes_per_s(c, 8, 0.87), 13.92e9, 1);
  EXPECT_DOUBLE_EQ(host_copy_bytes_per_s(c, 1), 32e9);
  EXPECT_EQ(copying_gpus_per_node(c, 1), 1);
  EXPECT_EQ(copying_gpus_per_node(c, 64), 8);
}

TEST(HostCopyRate, HostMemoryAndNoFigures) {
  ClusterSpec c;
  c.pcie_bandwidth_gbps = 32;
  c.host_memory_bandwidth_gbps = 40;  // 4 GPUs copying: 10 GB/s each, under their 32 GB/s links
  EXPECT_DOUBLE_EQ(host_copy_bytes_per_s(c, 4), 10e9);
  EXPECT_DOUBLE_EQ(host_copy_bytes_per_s(c, 1), 32e9);
  c.gpus_per_pcie_switch = 4;  // uplink unset: the GPU link's 32 GB/s, 8 GB/s each of 4
  EXPECT_DOUBLE_EQ(host_copy_bytes_per_s(c, 4), 8e9);
  EXPECT_DOUBLE_EQ(host_copy_bytes_per_s(c, 2), 16e9);  // 2 copying: min(32, 32 / 2, 40 / 2)
  c.pcie_bandwidth_gbps = 0;
  EXPECT_EQ(host_copy_bytes_per_s(c, 4), 0);
}

TEST(HostCopyRate, RooflinePricesACopyAtTheSharedRate) {
  // Tiny GPT on 8 GPUs of the DGX A100 preset: 1 MB copied in 5 us + 1e6 / 16e9 s.
  const Schedule s(testing::tiny({"cluster.gpus=8", "strategy.micro_batch=1"}));
  Task t;
  Copy k;
  k.direction = CopyDirection::kH2D;
  k.bytes = 1000000;
  t.op = k;
  EXPECT_NEAR(roofline_cost(s)(0, s.program(0), t), 5e-6 + 1e6 / 16e9, 1e-15);
}

}  // namespace
}  // namespace tandem
