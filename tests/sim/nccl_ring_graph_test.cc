// The inter-node ring as NCCL 2.18's graph search builds it (sim/collective_algorithms.h; NVIDIA/nccl
// src/graph/search.cc at v2.18.3-1): each channel enters a node from its NIC at the NIC's local GPU
// ("NET n -> GPU a -> GPU b -> .. -> GPU x -> NET n", search.cc:600, the same NIC both ways without
// crossNic, :448), visits the other GPUs over NVLink and leaves from the last one, x. When x reaches
// the NIC over PCIe (DGX A100: two GPUs and two NICs under each PCIe switch, the preset's
// gpus_per_pcie_switch 2) the channel crosses 7 NVLink hops a node; when no other GPU shares the
// NIC's switch (DGX H100: each ConnectX-7 with one GPU behind it) x sends through the entry GPU over
// NVLink (PXN, paths.cc:583-597), 8 hops. Flows and bus bandwidths derived by hand below.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "sim/collective_algorithms.h"

namespace tandem::sim {
namespace {

// Two nodes of 8 GPUs, 8 NICs; links without latency so that a phase's time is its load.
FabricModel two_nodes(double nvlink_gbs, double nic_gbs, int gpus_per_switch) {
  FabricModel f;
  f.gpus_per_node = 8, f.nics_per_node = 8, f.gpus_per_pcie_switch = gpus_per_switch;
  f.nvlink_bytes_s = nvlink_gbs * 1e9, f.nic_bytes_s = nic_gbs * 1e9;
  return f;
}

std::vector<int> sixteen() {
  std::vector<int> v(16);
  for (int i = 0; i < 16; ++i) v[size_t(i)] = i;
  return v;
}

CommPhase ring_phase(const FabricModel& f, double bytes) {
  const CollectivePlan plan = plan_collective(CollectiveOp::kAllReduce, sixteen(), 0, bytes, Algorithm::kRing,
                                              Granularity::kPhase, f);
  EXPECT_EQ(plan.phases.size(), 1u);
  return plan.phases.front();
}

bool has_flow(const CommPhase& p, int src, int dst) {
  return std::any_of(p.flows.begin(), p.flows.end(), [&](const Flow& fl) { return fl.src == src && fl.dst == dst; });
}

// DGX A100 (switch pairs {0,1}, {2,3}, ...): channel c enters at GPU c (NIC c's local GPU); the
// first GPU after c in rank order that shares c's switch is its pair, which leaves: channel 0 runs
// 0 2 3 4 5 6 7 1 and sends 1 -> 8; channel 1 runs 1 2 3 4 5 6 7 0 and sends 0 -> 9. Per node and
// channel 7 NVLink flows: 8 x 2 x 7 = 112, and 8 x 2 = 16 network flows; every GPU sends 7 NVLink
// flows (one in each channel but the one it leaves) and 1 network flow.
TEST(NcclRingGraph, SwitchPairsLeaveFromThePartnerWithSevenNvlinkHops) {
  const FabricModel f = two_nodes(240, 23.875, 2);
  const CommPhase p = ring_phase(f, 1 << 30);
  std::map<int, int> nvlink_sends, network_sends, network_receives;
  for (const Flow& fl : p.flows) {
    if (f.node_of(fl.src) == f.node_of(fl.dst)) ++nvlink_sends[fl.src];
    else ++network_sends[fl.src], ++network_receives[fl.dst];
  }
  int nvlink = 0;
  for (auto [g, count] : nvlink_sends) {
    EXPECT_EQ(count, 7) << "GPU " << g;
    nvlink += count;
  }
  EXPECT_EQ(nvlink, 112);
  EXPECT_EQ(network_sends.size(), 16u);
  for (auto [g, count] : network_sends) EXPECT_EQ(count, 1) << "GPU " << g;
  for (auto [g, count] : network_receives) EXPECT_EQ(count, 1) << "GPU " << g;
  EXPECT_TRUE(has_flow(p, 0, 2) && has_flow(p, 7, 1) && has_flow(p, 1, 8));  // channel 0
  EXPECT_TRUE(has_flow(p, 7, 0) && has_flow(p, 0, 9));                       // channel 1
  EXPECT_FALSE(has_flow(p, 0, 8));
}

// DGX H100 (no GPU shares a NIC's switch): channel c runs c, c+1, ..., c+7 (mod 8), the last relays
// back to c over NVLink (PXN) and c sends to the next node's GPU c: 8 NVLink flows per node and
// channel (128), GPU 7 -> 0 and 0 -> 8 in channel 0.
TEST(NcclRingGraph, NoSharedSwitchRelaysThroughTheEntryWithEightNvlinkHops) {
  const FabricModel f = two_nodes(360, 47.75, 0);
  const CommPhase p = ring_phase(f, 1 << 30);
  int nvlink = 0;
  for (const Flow& fl : p.flows) nvlink += f.node_of(fl.src) == f.node_of(fl.dst);
  EXPECT_EQ(nvlink, 128);
  EXPECT_TRUE(has_flow(p, 7, 0) && has_flow(p, 0, 8) && has_flow(p, 8, 0));
}

// Bus bandwidth of the lone ring (busbw = 2(n-1)/n x B / time, n 16; the phase carries 2(n-1)/n x B
// over every ring edge, all channels together, B/8 a channel):
//  - PXN (8 NVLink flows a channel): each GPU's NVLink carries all of it, each NIC 1/8:
//    min(NVLink, 8 x NIC) = min(360, 382) = 360 GB/s (DGX H100 efficiencies: 450 x .80, 50 x .955);
//  - pairs (7): NVLink 7/8 of it: min(360 x 8/7 = 411.4, 382) = 382 GB/s;
//  - DGX A100 pairs: min(240 x 8/7 = 274.3, 8 x 23.875 = 191) = 191 GB/s (NIC-bound either way).
TEST(NcclRingGraph, BusBandwidthFollowsTheHopsANodeCrosses) {
  const double B = double(int64_t(4) << 30);
  auto busbw = [&](const FabricModel& f) {
    const CollectivePlan plan =
        plan_collective(CollectiveOp::kAllReduce, sixteen(), 0, B, Algorithm::kRing, Granularity::kPhase, f);
    return 2.0 * 15 / 16 * B / uncontended_time(plan, f, ProtocolCost{}) / 1e9;
  };
  EXPECT_NEAR(busbw(two_nodes(360, 47.75, 0)), 360.0, 1e-6);
  EXPECT_NEAR(busbw(two_nodes(360, 47.75, 2)), 382.0, 1e-6);
  EXPECT_NEAR(busbw(two_nodes(240, 23.875, 2)), 191.0, 1e-6);
}

}  // namespace
}  // namespace tandem::sim
