// The NCCL pipeline fill term (sim/collective_algorithms.h, CollectivePlan):
//   fill = min(pipeline_depth, 8) * min(step_bytes, window) / (bottleneck bytes/s * protocol efficiency)
// paid once per collective (8 = NCCL_STEPS, the chunks a connection holds in flight), with the
// window 3e6 bytes that NcclTuner::cost_of gives every protocol and 0 in ideal mode. Depths: ring steps - 1 (2(n-1) steps for all-reduce, n-1 for
// all-gather and reduce-scatter), NVLS n-1, tree 2(floor(log2 N) + k - 1) - 1, chain n-2; step
// bytes: B/n (ring, NVLS), B/C (tree, C channels), B (chain).
//
// The fabric is the one the simulator builds (sim/simulation.cc) for the dgx-a100-80g preset with
// the default SimOptions efficiencies: NVLink 300 GB/s * 0.80 = 240e9 B/s, NIC 25 GB/s * 0.955 =
// 23.875e9 B/s, NVLink step latency 3 us (scenarios/clusters/dgx-a100-80g.textproto). The test
// reads these figures from the loaded preset and checks them against those numbers first, so that
// the expected values below follow from the formula by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/nccl_tuner.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

ClusterSpec a100_cluster(int gpus) {
  return load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                       {"cluster.gpus=" + std::to_string(gpus), "strategy.global_batch=" + std::to_string(2 * gpus)})
      .cluster;
}

FabricModel a100_fabric(int gpus) {
  const ClusterSpec c = a100_cluster(gpus);
  const NetworkEfficiency eff = SimOptions{}.efficiency;
  FabricModel f;
  f.gpus_per_node = c.gpus_per_node;
  f.nics_per_node = c.nics_per_node;
  f.nvlink_bytes_s = c.nvlink_bandwidth_gbps * 1e9 * eff.nvlink;
  f.nic_bytes_s = c.nic_bandwidth_gbps * 1e9 * eff.nic;
  f.nvlink_latency_s = c.nvlink_latency_us * 1e-6;
  f.nic_latency_s = c.nic_latency_us * 1e-6;
  return f;
}

std::vector<int> range(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

void expect_rel(double got, double want, const std::string& what, double rel = 1e-12) {
  EXPECT_NEAR(got, want, rel * std::abs(want)) << what;
}

TEST(PipelineFill, TheFabricFigures) {
  const FabricModel f = a100_fabric(8);
  EXPECT_EQ(f.gpus_per_node, 8);
  expect_rel(f.nvlink_bytes_s, 240e9, "nvlink");
  expect_rel(f.nic_bytes_s, 23.875e9, "nic");
  expect_rel(f.nvlink_latency_s, 3e-6, "nvlink latency");
  const ProtocolCost simple = NcclTuner(f, false).cost_of(Algorithm::kRing, Protocol::kSimple);
  EXPECT_EQ(simple.fill_window_bytes, 3e6);
  EXPECT_EQ(simple.efficiency, 1.0);
  expect_rel(simple.base_s, 8.4e-6, "ring/Simple base latency (NCCL 2.18 tuning.cc)");
}

TEST(PipelineFill, RingAllReduceOnOneNodeBothRegimes) {
  // n = 8 on one node: 2(n-1) = 14 ring steps, depth 13 (8 in flight), step bytes B/8, NVLink-bound.
  const FabricModel f = a100_fabric(8);
  NcclTuner tuner(f, false);
  struct Case {
    double bytes, want_simple_s;
  };
  const Case cases[] = {
      // B/n = 4e6 / 8 = 5e5 < 3e6 (the window): fill = 8 * 5e5 / 240e9 = 16.667 us.
      {4e6, 8 * 5e5 / 240e9},
      // B/n = 64e6 / 8 = 8e6 > 3e6: the window caps it: fill = 8 * 3e6 / 240e9 = 100 us.
      {64e6, 8 * 3e6 / 240e9},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("bytes " + std::to_string(c.bytes));
    const CollectivePlan plan =
        plan_collective(CollectiveOp::kAllReduce, range(8), -1, c.bytes, Algorithm::kRing, Granularity::kPhase, f);
    EXPECT_EQ(plan.pipeline_depth, 13);
    EXPECT_EQ(plan.step_bytes, c.bytes / 8);
    EXPECT_FALSE(plan.crosses_network);
    const ProtocolCost simple = tuner.cost_of(Algorithm::kRing, Protocol::kSimple);
    expect_rel(pipeline_fill_s(plan, f, simple), c.want_simple_s, "Simple");
    // LL128 moves 120 data bytes of every 128: the same fill over 240e9 * 120/128.
    const ProtocolCost ll128 = tuner.cost_of(Algorithm::kRing, Protocol::kLL128);
    expect_rel(pipeline_fill_s(plan, f, ll128), c.want_simple_s * 128.0 / 120.0, "LL128");
  }
}

TEST(PipelineFill, UncontendedTimeIncludesItExactlyOnce) {
  // Ring all-reduce on 8 A100s of one node, Simple (efficiency 1, base 8.4 us):
  //   base + fill + 2(n-1)/n * B / 240e9 + 2(n-1) * 3 us
  // for both granularities: the phase plan (one phase of 14 steps' bytes and hops) and the step
  // plan (14 phases of one step each) pay base and fill once per collective, not once per phase.
  const FabricModel f = a100_fabric(8);
  NcclTuner tuner(f, false);
  const ProtocolCost simple = tuner.cost_of(Algorithm::kRing, Protocol::kSimple);
  ProtocolCost no_fill = simple;
  no_fill.fill_window_bytes = 0;
  for (double bytes : {4e6, 64e6})
    for (Granularity g : {Granularity::kPhase, Granularity::kStep}) {
      SCOPED_TRACE("bytes " + std::to_string(bytes) + (g == Granularity::kStep ? " step" : " phase"));
      const CollectivePlan plan = plan_collective(CollectiveOp::kAllReduce, range(8), -1, bytes, Algorithm::kRing, g, f);
      EXPECT_EQ(plan.phases.size(), g == Granularity::kStep ? 14u : 1u);
      const double fill = 8 * std::min(bytes / 8, 3e6) / 240e9;
      const double rest = 8.4e-6 + 14.0 / 8 * bytes / 240e9 + 14 * 3e-6;
      expect_rel(uncontended_time(plan, f, simple), rest + fill, "with fill", 1e-9);
      expect_rel(uncontended_time(plan, f, no_fill), rest, "without", 1e-9);
      EXPECT_EQ(pipeline_fill_s(plan, f, no_fill), 0.0);
    }
}

TEST(PipelineFill, ReplayPaysItOncePerCollective) {
  // The same collective simulated on the preset cluster (forced ring, Simple), through the closed
  // form and through SimGrid flows, with one phase or one per ring step: the replay adds the
  // fill at the first phase only (flow_launcher.cc phase_flows_done). B = 64e6: rest = 8.4 us +
  // 1.75 * 64e6 / 240e9 + 42 us = 517.07 us, fill 8 * 3e6 / 240e9 = 100 us; a fill per step would
  // add 13 more (1300 us), a missing fill would take 16 % off: far outside the 1 % tolerance.
  const ClusterSpec c = a100_cluster(8);
  const double bytes = 64e6;
  const double want = 8.4e-6 + 14.0 / 8 * bytes / 240e9 + 14 * 3e-6 + 8 * 3e6 / 240e9;
  for (bool closed : {true, false})
    for (Granularity g : {Granularity::kPhase, Granularity::kStep}) {
      SCOPED_TRACE(std::string(closed ? "closed form" : "flows") + (g == Granularity::kStep ? ", step" : ", phase"));
      SimOptions o;
      o.algorithm = Algorithm::kRing;
      o.protocol = Protocol::kSimple;
      o.granularity = g;
      o.closed_form_uncontended = closed;
      Schedule s = make_schedule(c, 8, {range(8)}, [&](int rank) {
        ProgramWriter w(rank);
        w.collective(CollectiveOp::kAllReduce, 0, int64_t(bytes));
        return w.p;
      });
      EXPECT_NEAR(simulate(s, o).iteration_time_s, want, 0.01 * want);
    }
}

TEST(PipelineFill, DepthAndStepOfEachAlgorithm) {
  const double B = 64e6;
  FabricModel f = a100_fabric(32);
  NcclTuner tuner(f, false);
  const ProtocolCost simple = tuner.cost_of(Algorithm::kRing, Protocol::kSimple);
  // Ring all-gather and reduce-scatter on one node: n-1 = 7 steps, depth 6, B/8 per step.
  for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
    const CollectivePlan p = plan_collective(op, range(8), -1, B, Algorithm::kRing, Granularity::kPhase, f);
    EXPECT_EQ(p.pipeline_depth, 6);
    EXPECT_EQ(p.step_bytes, B / 8);
    expect_rel(pipeline_fill_s(p, f, simple), 6 * 3e6 / 240e9, to_string(op));
  }
  // Ring all-reduce over 4 nodes x 8: 2 * 31 = 62 steps, depth 61 of which 8 in flight, B/32 =
  // 2e6 per step (under the window), NIC-bound: 8 * 2e6 / 23.875e9.
  {
    const CollectivePlan p = plan_collective(CollectiveOp::kAllReduce, range(32), -1, B, Algorithm::kRing,
                                             Granularity::kPhase, f);
    EXPECT_EQ(p.pipeline_depth, 61);
    EXPECT_TRUE(p.crosses_network);
    expect_rel(pipeline_fill_s(p, f, simple), 8 * 2e6 / 23.875e9, "ring across nodes");
  }
  // Tree all-reduce over the same 4 nodes x 8 GPUs: N = 4, k = 8, C = 8 channels (8 NICs):
  // depth 2(floor(log2 4) + 8 - 1) - 1 = 17 of which 8 in flight, step B/8 = 8e6 > window:
  // 8 * 3e6 / 23.875e9; with a small B = 4e6, B/8 = 5e5: 8 * 5e5 / 23.875e9.
  {
    const CollectivePlan p = plan_collective(CollectiveOp::kAllReduce, range(32), -1, B, Algorithm::kTree,
                                             Granularity::kPhase, f);
    EXPECT_EQ(p.pipeline_depth, 17);
    EXPECT_EQ(p.step_bytes, B / 8);
    EXPECT_TRUE(p.crosses_network);
    const ProtocolCost tree = tuner.cost_of(Algorithm::kTree, Protocol::kSimple);
    expect_rel(pipeline_fill_s(p, f, tree), 8 * 3e6 / 23.875e9, "tree");
    const CollectivePlan small = plan_collective(CollectiveOp::kAllReduce, range(32), -1, 4e6, Algorithm::kTree,
                                                 Granularity::kPhase, f);
    expect_rel(pipeline_fill_s(small, f, tree), 8 * 5e5 / 23.875e9, "small tree");
  }
  // Broadcast chain on 8 GPUs of one node: depth n-2 = 6, the whole B per link (capped by the
  // window): 6 * 3e6 / 240e9; 1e6 bytes: 6 * 1e6 / 240e9.
  {
    const CollectivePlan p = plan_collective(CollectiveOp::kBroadcast, range(8), 0, B, Algorithm::kRing,
                                             Granularity::kPhase, f);
    EXPECT_EQ(p.pipeline_depth, 6);
    EXPECT_EQ(p.step_bytes, B);
    EXPECT_FALSE(p.crosses_network);
    expect_rel(pipeline_fill_s(p, f, simple), 6 * 3e6 / 240e9, "chain");
    const CollectivePlan small = plan_collective(CollectiveOp::kBroadcast, range(8), 0, 1e6, Algorithm::kRing,
                                                 Granularity::kPhase, f);
    expect_rel(pipeline_fill_s(small, f, simple), 6 * 1e6 / 240e9, "small chain");
  }
  // NVLS all-reduce on one node (Hopper switch): depth n-1 = 7, B/8 per slice.
  {
    f.nvls = true;
    const CollectivePlan p = plan_collective(CollectiveOp::kAllReduce, range(8), -1, 4e6, Algorithm::kNvls,
                                             Granularity::kPhase, f);
    EXPECT_EQ(p.pipeline_depth, 7);
    EXPECT_EQ(p.step_bytes, 4e6 / 8);
    expect_rel(pipeline_fill_s(p, f, simple), 7 * 5e5 / 240e9, "nvls");
  }
  // A point-to-point message has no pipeline: no fill (the tensor-ring exchanges pay none).
  EXPECT_EQ(pipeline_fill_s(plan_p2p(0, 1, B), f, simple), 0.0);
}

TEST(PipelineFill, IdealModeHasNone) {
  // The ideal tuner prices with no protocol: window 0, so no fill, and the ring all-reduce is the
  // plain alpha-beta 2(n-1)/n * B / 240e9 + 14 * 3 us.
  const FabricModel f = a100_fabric(8);
  NcclTuner ideal(f, true);
  const ProtocolCost c = ideal.cost_of(Algorithm::kRing, Protocol::kSimple);
  EXPECT_EQ(c.fill_window_bytes, 0.0);
  EXPECT_EQ(c.base_s, 0.0);
  for (double bytes : {4e6, 64e6}) {
    const CollectivePlan plan =
        plan_collective(CollectiveOp::kAllReduce, range(8), -1, bytes, Algorithm::kRing, Granularity::kPhase, f);
    EXPECT_GT(plan.pipeline_depth, 0);
    EXPECT_EQ(pipeline_fill_s(plan, f, c), 0.0);
    expect_rel(uncontended_time(plan, f, c), 14.0 / 8 * bytes / 240e9 + 14 * 3e-6, "ideal", 1e-9);
    // What the tuner hands the replay for this collective carries no window either.
    EXPECT_EQ(ideal.choose(CollectiveOp::kAllReduce, range(8), bytes).cost.fill_window_bytes, 0.0);
  }
}

}  // namespace
}  // namespace tandem::sim::testing
