// Host copies that share a PCIe switch uplink or the node's host memory (sim/platform_builder.h,
// docs/offload.md "PCIe and host memory"). Every expected time is derived by hand: SimGrid shares
// a link's bandwidth equally among the flows crossing it (max-min fairness), a flow's rate is its
// tightest share, and each copy adds cluster.pcie_latency_us once. Ideal network: no efficiency.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/sim/sim_test_util.h"

namespace tandem::sim::testing {
namespace {

constexpr int64_t kBytes = int64_t(1) << 30;  // 1 GiB per copy
constexpr double kLatency = 3e-6;             // test_cluster's pcie_latency_us

// Ranks `copying` each copy kBytes in `dir[rank]` at the start; every other rank of the world
// does nothing. Returns the iteration time (the last copy's end).
double copies(const ClusterSpec& c, int world, const std::vector<int>& copying, const std::vector<CopyDirection>& dir) {
  Schedule s = make_schedule(c, world, {}, [&](int rank) {
    ProgramWriter w(rank);
    for (size_t i = 0; i < copying.size(); ++i) {
      if (copying[i] != rank) continue;
      const BufferId host = w.buffer("host", kBytes, Placement::kHost);
      const BufferId dev = w.buffer("dev", kBytes);
      const TaskId a = w.alloc(host);
      const TaskId b = w.alloc(dev, {a});
      Copy x;
      x.direction = dir[i];
      x.bytes = kBytes;
      x.src = dir[i] == CopyDirection::kH2D ? host : dev;
      x.dst = dir[i] == CopyDirection::kH2D ? dev : host;
      w.add(dir[i] == CopyDirection::kH2D ? Stream::kH2D : Stream::kD2H, x, {b});
    }
    return w.p;
  });
  const SimResult r = simulate(s, ideal_options());
  EXPECT_FALSE(r.oom);
  return r.iteration_time_s;
}

const auto H2D = CopyDirection::kH2D;
const auto D2H = CopyDirection::kD2H;

TEST(PcieContention, OwnLinksDoNotContend) {
  // No switch, no host-memory figure: each GPU's copy runs on its own 32 GB/s link.
  const ClusterSpec c = test_cluster(8);
  const double alone = kBytes / 32e9 + kLatency;
  EXPECT_NEAR(copies(c, 8, {0}, {H2D}), alone, 1e-9);
  EXPECT_NEAR(copies(c, 8, {0, 1}, {H2D, H2D}), alone, 1e-9);
}

TEST(PcieContention, TwoGpusOnOneSwitchTakeTwiceAsLong) {
  // Two GPUs per switch, the uplink as wide as one GPU's link (32 GB/s, as the DGX A100 preset):
  // GPUs 0 and 1 copying at once share the uplink, 16 GB/s each, so each copy takes 2x.
  ClusterSpec c = test_cluster(8);
  c.gpus_per_pcie_switch = 2;
  c.pcie_switch_uplink_gbps = 32;
  const double alone = kBytes / 32e9 + kLatency;
  const double shared = 2.0 * kBytes / 32e9 + kLatency;
  EXPECT_NEAR(copies(c, 8, {0}, {H2D}), alone, 1e-9);
  EXPECT_NEAR(copies(c, 8, {0, 1}, {H2D, H2D}), shared, 1e-9);
  // GPUs 0 and 2 are on different switches: no contention.
  EXPECT_NEAR(copies(c, 8, {0, 2}, {H2D, H2D}), alone, 1e-9);
  // The uplink is full duplex: one GPU up, the other down do not contend.
  EXPECT_NEAR(copies(c, 8, {0, 1}, {H2D, D2H}), alone, 1e-9);
  // An uplink wider than the GPUs' links (48 GB/s): 24 GB/s each, 32/24 = 4/3 of the time alone.
  c.pcie_switch_uplink_gbps = 48;
  EXPECT_NEAR(copies(c, 8, {0, 1}, {H2D, H2D}), kBytes / 24e9 + kLatency, 1e-9);
}

TEST(PcieContention, HostMemoryBandwidthIsSharedByEveryCopyOfTheNode) {
  // Host memory 40 GB/s for the node, reads and writes together; own PCIe links of 32 GB/s.
  ClusterSpec c = test_cluster(8);
  c.host_memory_bandwidth_gbps = 40;
  // One copy: the PCIe link (32) is the limit.
  EXPECT_NEAR(copies(c, 8, {0}, {H2D}), kBytes / 32e9 + kLatency, 1e-9);
  // Two copies of different GPUs, one each way: 20 GB/s each from the shared memory.
  EXPECT_NEAR(copies(c, 8, {0, 5}, {H2D, D2H}), kBytes / 20e9 + kLatency, 1e-9);
  // Four copies: 10 GB/s each.
  EXPECT_NEAR(copies(c, 8, {0, 1, 2, 3}, {H2D, H2D, D2H, D2H}), kBytes / 10e9 + kLatency, 1e-9);
  // Another node's memory is its own: ranks 0 and 8 (nodes 0 and 1) copy at 32 GB/s each.
  EXPECT_NEAR(copies(c, 16, {0, 8}, {H2D, H2D}), kBytes / 32e9 + kLatency, 1e-9);
}

TEST(PcieContention, SwitchAndMemoryTogether) {
  // Switch uplinks of 32, memory 48: GPUs 0, 1 (switch 0) and 2 (switch 1) copy up at once.
  // Max-min: memory offers 16 each, switch 0 offers 16 each to GPUs 0 and 1: all three at 16.
  // Then GPU 2 is limited by memory only: 48 - 16 - 16 = 16 too. Every copy: 1 GiB at 16 GB/s.
  ClusterSpec c = test_cluster(8);
  c.gpus_per_pcie_switch = 2;
  c.pcie_switch_uplink_gbps = 32;
  c.host_memory_bandwidth_gbps = 48;
  EXPECT_NEAR(copies(c, 8, {0, 1, 2}, {H2D, H2D, H2D}), kBytes / 16e9 + kLatency, 1e-9);
  // Memory of 64: switch 0's GPUs at 16 each (their uplink), GPU 2 takes the rest up to its own
  // link: min(32, 64 - 32) = 32. The last copy to end is switch 0's: 1 GiB at 16 GB/s.
  c.host_memory_bandwidth_gbps = 64;
  EXPECT_NEAR(copies(c, 8, {0, 1, 2}, {H2D, H2D, H2D}), kBytes / 16e9 + kLatency, 1e-9);
}

// One rank on a node of its own (test_cluster(1): r = 1, the rank's share of host memory is the
// whole 40 GB/s): a host Adam over `adam_bytes` of host memory (fp32: 4 + 24 + 4 = 32 bytes per
// element) and an H2D copy of kBytes, both from the start when given. Returns the iteration time.
double adam_and_copy(int64_t adam_bytes, bool copy) {
  ClusterSpec c = test_cluster(1);
  c.host_memory_bandwidth_gbps = 40;
  Schedule s = make_schedule(c, 1, {}, [&](int rank) {
    ProgramWriter w(rank);
    if (adam_bytes > 0) {
      Compute a;
      a.kernel = Kernel::kAdam;
      a.dtype = DType::kFp32;
      a.phase = Phase::kOptimizer;
      a.dims = {adam_bytes / 32, 0, 0, 0, 0, 0};
      w.add(Stream::kHost, a);
    }
    if (copy) {
      const BufferId host = w.buffer("host", kBytes, Placement::kHost);
      const BufferId dev = w.buffer("dev", kBytes);
      const TaskId a = w.alloc(host);
      const TaskId b = w.alloc(dev, {a});
      Copy x;
      x.direction = H2D;
      x.bytes = kBytes;
      x.src = host;
      x.dst = dev;
      w.add(Stream::kH2D, x, {b});
    }
    return w.p;
  });
  const SimResult r = simulate(s, ideal_options());
  EXPECT_FALSE(r.oom);
  return r.iteration_time_s;
}

TEST(PcieContention, HostAdamSharesHostMemoryWithTheCopiesInTime) {
  // The host Adam's memory traffic is a flow through the rank's share of host memory and the
  // node's memory link (sim/platform_builder.h); the cluster gives no cores, so no compute term.
  // Alone: 1 GiB at 40 GB/s. The copy alone: its 32 GB/s PCIe link.
  EXPECT_NEAR(adam_and_copy(kBytes, false), kBytes / 40e9, 1e-9);
  EXPECT_NEAR(adam_and_copy(0, true), kBytes / 32e9 + kLatency, 1e-9);
  // Together: two flows on the 40 GB/s memory link, max-min 20 GB/s each (under the copy's 32):
  // both move 1 GiB at 20 GB/s; the copy ends last, by its latency. (A host Adam that took its
  // time alone would end at 26.8 ms and the copy at 33.6 ms.)
  EXPECT_NEAR(adam_and_copy(kBytes, true), kBytes / 20e9 + kLatency, 1e-9);
  // Half a GiB of Adam: both at 20 GB/s until the Adam ends (0.5 GiB / 20 GB/s); the copy has
  // half its bytes left, then at its link's 32 GB/s.
  EXPECT_NEAR(adam_and_copy(kBytes / 2, true), (kBytes / 2) / 20e9 + (kBytes / 2) / 32e9 + kLatency, 1e-9);
}

}  // namespace
}  // namespace tandem::sim::testing
