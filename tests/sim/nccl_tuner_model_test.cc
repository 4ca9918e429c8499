// NCCL 2.18's choice of algorithm and protocol (sim/nccl_tuner_model.h), derived by hand from
// NVIDIA/nccl src/graph/tuning.cc at v2.18.3-1 on a few shapes. Tables used (tuning.cc lines):
//   baseLat (56-59)  tree LL 6.8, LL128 14, Simple 0; ring 6.6, 14, 8.4; NVLS Simple 23
//   hwLat (65-78)    NVLink tree .6/1.25/4, ring .6/1.9/3.4; NET tree 5/8.5/14, ring 2.7/4/14
//   llMaxBws (86-90) Intel row {39, 39, 20.4}; Hopper one node 87.7
//   perChMaxTreeBws (102-106) Ampere {24, 23.6, 17.8}; perChMaxRingLL128Bws Ampere 20, Hopper 36.7;
//   perChMaxTreeLL128Bws Ampere 20
//   treeCorrectionFactor (375-379) at log2(bytes/64) = 10: LL .6, LL128 .6, Simple .6
// netOverhead (111-118): Intel 1 us, AMD 2 us, x3 for Simple; llMaxBws AMD row {-, 22.5, 19.0}. Plateau (390-393): ring/Simple multi-node
// all-reduce latency x1.4 on sm 80+. time = lat + bytes / (1000 * bw) us (396).
//
// The fabric is the dgx-a100-80g preset's with the fitted efficiencies (docs/sim.md): NVLink
// 300 x 0.80 = 240 GB/s per GPU each way, NIC 25 x 0.955 = 23.875 GB/s, 8 NICs a node. The
// physical ring of 8 GPUs a node runs one channel per NIC: each NIC carries 1/8 of the ring's
// traffic, each GPU's NVLink all of it, so busBw = min(8 x 23.875, 240) = 191 GB/s, 8 channels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "shared/scenario.h"
#include "sim/nccl_tuner.h"
#include "sim/nccl_tuner_model.h"
#include "sim/platform_builder.h"
#include "sim/simulation.h"

namespace tandem::sim {
namespace {

std::vector<int> range(int n, int stride = 1) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i * stride);
  return v;
}

FabricModel a100() {
  FabricModel f;
  f.gpus_per_node = 8, f.nics_per_node = 8;
  f.nvlink_bytes_s = 240e9, f.nic_bytes_s = 23.875e9;
  f.nvlink_latency_s = 3e-6, f.nic_latency_s = 5e-6;
  f.compute_capability = 80;
  return f;
}

FabricModel h100_node() {
  FabricModel f;
  f.gpus_per_node = 8, f.nics_per_node = 8;
  f.nvlink_bytes_s = 450e9 * 0.80, f.nic_bytes_s = 50e9 * 0.955;  // 360 GB/s a GPU each way
  f.nvlink_latency_s = 3e-6, f.nic_latency_s = 5e-6;
  f.nvls = true, f.compute_capability = 90;
  return f;
}

NcclModelShape shape(int ranks, int nodes, int channels, double bus_bw, int cc) {
  NcclModelShape s;
  s.ranks = ranks, s.nodes = nodes, s.channels = channels, s.bus_bw_gbs = bus_bw, s.compute_capability = cc;
  return s;
}

void expect_choice(const TunedCollective& t, Algorithm a, Protocol p, const char* what) {
  EXPECT_EQ(t.algorithm, a) << what << ": got " << to_string(t.algorithm);
  EXPECT_EQ(t.protocol, p) << what << ": got " << to_string(t.protocol);
}

// 2 nodes x 8 A100, all-reduce (n 16, N 2: nsteps 30, nInterSteps 4; index2 1, Intel).
TEST(NcclTunerModel, TwoA100NodesEntriesFromTuningCc) {
  const NcclModelShape s = shape(16, 2, 8, 191.0, 80);
  // ring/Simple: bw 191 x 16/30; lat 8.4 + 26 x max(3.4, 3 x 1) + 4 x 14 = 152.8 us.
  NcclModelEntry e = nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kSimple, s);
  EXPECT_NEAR(e.bw_gbs, 191.0 * 16 / 30, 1e-9);
  EXPECT_NEAR(e.lat_us, 152.8, 1e-9);
  // ring/LL: min(llMaxBw 39, 191/4) x 16/30; lat 6.6 + 26 x max(.6, 1) + 4 x 2.7 = 43.4 us.
  e = nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kLL, s);
  EXPECT_NEAR(e.bw_gbs, 39.0 * 16 / 30, 1e-9);
  EXPECT_NEAR(e.lat_us, 43.4, 1e-9);
  // ring/LL128: min(191 x .92, 8 x 20) x 16/30; lat 14 + 26 x 1.9 + 4 x 4 = 79.4 us.
  e = nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kLL128, s);
  EXPECT_NEAR(e.bw_gbs, 160.0 * 16 / 30, 1e-9);
  EXPECT_NEAR(e.lat_us, 79.4, 1e-9);
  // tree/Simple: min(191 x .92, 8 x 23.6) x .5; lat 0 + 2 (7 x 4 + log2(2) x 14) = 84 us.
  e = nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kTree, Protocol::kSimple, s);
  EXPECT_NEAR(e.bw_gbs, 191.0 * .92 * .5, 1e-9);
  EXPECT_NEAR(e.lat_us, 84.0, 1e-9);
  // tree/LL: min(175.72 / 3.8, 39) x .5; lat 6.8 + 2 (7 x .6 + 5) = 25.2 us.
  e = nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kTree, Protocol::kLL, s);
  EXPECT_NEAR(e.bw_gbs, 39.0 * .5, 1e-9);
  EXPECT_NEAR(e.lat_us, 25.2, 1e-9);
  // Reduce-scatter: the ring only (tuning.cc:168); nsteps 15, nInterSteps 1:
  // Simple lat 8.4 + 14 x 3.4 + 1 x 14 = 70 us, bw 191 x 16/15.
  EXPECT_EQ(nccl_model_entry(CollectiveOp::kReduceScatter, Algorithm::kTree, Protocol::kSimple, s).bw_gbs, 0);
  e = nccl_model_entry(CollectiveOp::kReduceScatter, Algorithm::kRing, Protocol::kSimple, s);
  EXPECT_NEAR(e.bw_gbs, 191.0 * 16 / 15, 1e-9);
  EXPECT_NEAR(e.lat_us, 70.0, 1e-9);
  // 4 GiB: ring/Simple 152.8 x 1.4 (plateau: 2^32 / (8 x 16) >= 64) + 2^32 / (1000 x 101.87).
  const double B = double(int64_t(4) << 30);
  EXPECT_NEAR(nccl_model_time_us(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kSimple, s, B),
              152.8 * 1.4 + B / (1000 * 191.0 * 16 / 30), 1e-6);
  // tree/Simple at 4 GiB: no correction (log2(2^32 / 64) = 26 >= 23): 84 + 2^32 / (1000 x 87.86).
  EXPECT_NEAR(nccl_model_time_us(CollectiveOp::kAllReduce, Algorithm::kTree, Protocol::kSimple, s, B),
              84.0 + B / (1000 * 87.86), 1e-6);
}

// The choices on those two nodes: 4 GiB -> ring/Simple (42,376 us against tree/Simple 48,968,
// ring/LL128 79 + 2^32/85,333 = 50,411; the LL ones ~206,000 and more). 64 KiB -> tree/LL:
// 25.2 + 65536 / (1000 x 19.5 x .6) = 30.8 us, against ring/LL 43.4 + 65536 / 20,800 = 46.6 us
// (and every Simple/LL128 pair above 79 us of latency alone, ring/Simple with the plateau).
TEST(NcclTunerModel, TwoA100NodesRingSimpleForLargeTreeLLForSmall) {
  NcclTuner tuner(a100(), /*ideal=*/false);
  const std::vector<int> all = range(16);
  const TunedCollective big = tuner.choose(CollectiveOp::kAllReduce, all, double(int64_t(4) << 30));
  expect_choice(big, Algorithm::kRing, Protocol::kSimple, "4 GiB");
  // Timed as before the choice changed: the protocol's own cost (efficiency, base, fill window).
  const ProtocolCost simple = tuner.cost_of(Algorithm::kRing, Protocol::kSimple);
  EXPECT_EQ(big.cost.efficiency, simple.efficiency);
  EXPECT_EQ(big.cost.base_s, simple.base_s);
  EXPECT_EQ(big.cost.fill_window_bytes, simple.fill_window_bytes);
  expect_choice(tuner.choose(CollectiveOp::kAllReduce, all, 65536), Algorithm::kTree, Protocol::kLL, "64 KiB");
}

// 64 nodes x 8 A100 (n 512, N 64: index2 2, llMaxBw 20.4, perChMaxTreeBw 17.8), 64 KiB:
//   tree/LL: busBw min(min(175.72, 8 x 17.8) / 3.8, 20.4) = 20.4, bw 10.2, x .6 (corr) = 6.12;
//            lat 6.8 + 2 (7 x .6 + 6 x 5) = 75.2; time 75.2 + 65536 / 6120 = 85.9 us;
//   ring/LL: lat 6.6 + (1022 - 128) x 1 + 128 x 2.7 = 1246.2 us;
//   tree/LL128: lat 14 + 2 (7 x 1.25 + 6 x 8.5) = 133.5; tree/Simple: 2 (7 x 4 + 6 x 14) = 224.
TEST(NcclTunerModel, SmallAllReduceAcrossManyNodesTakesTreeLL) {
  const NcclModelShape s = shape(512, 64, 8, 191.0, 80);
  EXPECT_NEAR(nccl_model_time_us(CollectiveOp::kAllReduce, Algorithm::kTree, Protocol::kLL, s, 65536),
              75.2 + 65536 / (1000 * 20.4 * .5 * .6), 1e-6);
  EXPECT_NEAR(nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kLL, s).lat_us, 1246.2, 1e-9);
  NcclTuner tuner(a100(), false);
  expect_choice(tuner.choose(CollectiveOp::kAllReduce, range(512), 65536), Algorithm::kTree, Protocol::kLL,
                "64 nodes, 64 KiB");
}

// One H100 node with NVLS (n 8, N 1: Hopper row, llMaxBw 87.7, perChMaxRingLL128 36.7; busBw 360
// GB/s: the ring's NVLink; 8 channels). 64 KiB: ring/LL 15.0 + 65536 / (1000 x 87.7 x 8/14) =
// 16.3 us against NVLS 23 + 65536 / 300,000 = 23.2 (ring/LL128 40.6, ring/Simple 56 us of latency).
// 16 MiB: NVLS 23 + 2^24 / (1000 x 360 x 5/6) = 78.9 us against ring/Simple 56 + 2^24 / 205,714 =
// 137.6, ring/LL128 40.6 + 2^24 / 167,771 = 140.6, ring/LL 349.8.
TEST(NcclTunerModel, OneH100NodeRingLLForSmallNvlsForLarge) {
  const NcclModelShape s = shape(8, 1, 8, 360.0, 90);
  EXPECT_NEAR(nccl_model_time_us(CollectiveOp::kAllReduce, Algorithm::kNvls, Protocol::kSimple, s, 1 << 24),
              23.0 + double(1 << 24) / (1000 * 300.0), 1e-6);
  EXPECT_NEAR(nccl_model_time_us(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kLL, s, 65536),
              15.0 + 65536 / (1000 * 87.7 * 8 / 14), 1e-6);
  EXPECT_LT(nccl_model_time_us(CollectiveOp::kAllReduce, Algorithm::kNvls, Protocol::kLL, s, 1 << 24), 0);
  NcclTuner tuner(h100_node(), false);
  expect_choice(tuner.choose(CollectiveOp::kAllReduce, range(8), 65536), Algorithm::kRing, Protocol::kLL, "64 KiB");
  const TunedCollective nvls = tuner.choose(CollectiveOp::kAllReduce, range(8), 1 << 24);
  expect_choice(nvls, Algorithm::kNvls, Protocol::kSimple, "16 MiB");
  EXPECT_NEAR(nvls.cost.base_s, 23e-6, 1e-15);  // NVLS timed with NCCL's NVLS base latency, as before
}

// Forcing keeps working: an algorithm forced is kept where it applies and NCCL's model picks its
// protocol (tree at 4 GiB: Simple 84 + 2^32 / 87,860 = 48,968 us against LL128
// 14 + 2 (7 x 1.25 + 8.5) = 48.5 + 2^32 / (1000 x min(164.7, 160) x .5) = 53,736); a protocol
// forced picks the algorithm (LL at 4 GiB: ring 43.4 + 2^32 / 20,800 = 206,532 against tree
// 25.2 + 2^32 / 19,500 = 220,280).
TEST(NcclTunerModel, ForcedAlgorithmOrProtocolStillChoosesTheRest) {
  const double B = double(int64_t(4) << 30);
  NcclTuner tree(a100(), false, Algorithm::kTree);
  expect_choice(tree.choose(CollectiveOp::kAllReduce, range(16), B), Algorithm::kTree, Protocol::kSimple, "tree");
  NcclTuner ll(a100(), false, std::nullopt, Protocol::kLL);
  expect_choice(ll.choose(CollectiveOp::kAllReduce, range(16), B), Algorithm::kRing, Protocol::kLL, "LL");
  // A tree forced on one node does not apply (no single-node tree plan): the ring, as before.
  NcclTuner one(a100(), false, Algorithm::kTree);
  EXPECT_EQ(one.choose(CollectiveOp::kAllReduce, range(8), B).algorithm, Algorithm::kRing);
}

// The hosts' CPU vendor (cluster.host_cpu_vendor; tuning.cc:111-118 netOverhead Intel 1 us, AMD 2 us,
// x3 for Simple; :144 the llMaxBws row by vendor across nodes). 4 A100 nodes, one GPU each (a
// data-parallel group at tp 8: n 4, N 4, 1 channel, busBw 23.875 = one NIC; nsteps 6 < nInterSteps 8),
// all-reduce of 4 MiB:
//   ring/LL128: busBw min(23.875 x .7 (ppn < 2), 1 x 20) = 16.7125, bw x 4/6 = 11.1417;
//     lat 14 + (6 - 8) x max(1.9, netOverhead) + 8 x 4.0: Intel 42.2, AMD 42.0 us;
//     time 42.2 + 4194304 / 11141.7 = 418.65 us (Intel), 418.45 (AMD);
//   ring/Simple: bw 23.875 x 4/6 = 15.9167; lat 8.4 + (6 - 8) x max(3.4, 3 x netOverhead) + 8 x 14:
//     Intel 113.6, AMD 108.4, x 1.4 (plateau: 4 MiB / 4 >= 64): 159.04, 151.76;
//     time + 4194304 / 15916.7 = 263.52: Intel 422.56 us, AMD 415.28 us.
// Intel: ring/LL128; AMD: ring/Simple (NCCL's formula takes the intra-node steps negative here, so
// the larger AMD overhead lowers the latency: tuning.cc as written).
TEST(NcclTunerModel, AmdHostsTakeTheirOwnRowAndOverhead) {
  NcclModelShape s = shape(4, 4, 1, 23.875, 80);
  EXPECT_NEAR(nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kLL128, s).lat_us, 42.2, 1e-9);
  EXPECT_NEAR(nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kSimple, s).lat_us, 113.6, 1e-9);
  s.cpu_amd = true;
  EXPECT_NEAR(nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kLL128, s).lat_us, 42.0, 1e-9);
  EXPECT_NEAR(nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kSimple, s).lat_us, 108.4, 1e-9);
  EXPECT_NEAR(nccl_model_time_us(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kSimple, s, 1 << 22),
              108.4 * 1.4 + double(1 << 22) / (1000 * 23.875 * 4 / 6), 1e-6);
  // llMaxBws across nodes: 2 nodes Intel 39.0, AMD 22.5 (ring/LL: min(llMaxBw, 191 / 4) x 16/30).
  NcclModelShape two = shape(16, 2, 8, 191.0, 80);
  two.cpu_amd = true;
  EXPECT_NEAR(nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kLL, two).bw_gbs,
              22.5 * 16 / 30, 1e-9);
  EXPECT_NEAR(nccl_model_entry(CollectiveOp::kAllReduce, Algorithm::kRing, Protocol::kLL, two).lat_us,
              6.6 + 26 * 2.0 + 4 * 2.7, 1e-9);

  const std::vector<int> rail = range(4, 8);  // GPU 0 of each of 4 nodes
  FabricModel intel = a100(), amd = a100();
  amd.cpu_amd = true;
  NcclTuner on_intel(intel, false), on_amd(amd, false);
  expect_choice(on_intel.choose(CollectiveOp::kAllReduce, rail, 1 << 22), Algorithm::kRing, Protocol::kLL128, "Intel");
  expect_choice(on_amd.choose(CollectiveOp::kAllReduce, rail, 1 << 22), Algorithm::kRing, Protocol::kSimple, "AMD");
}

// The scenario carries the vendor to the fabric: the dgx-a100-80g preset's hosts are AMD EPYC 7742
// (DGX A100 datasheet), dgx-h100's Intel Xeon Platinum 8480C (DGX H100 datasheet).
TEST(NcclTunerModel, PresetsCarryTheirHostCpuVendor) {
  for (auto [preset, amd] : {std::pair{"dgx-a100-80g", true}, std::pair{"dgx-h100", false},
                             std::pair{"hgx-h200", false}}) {
    const ClusterSpec cl = load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                                         {std::string("cluster.preset=") + preset, "cluster.gpus=16",
                                          "strategy.global_batch=32"})
                               .cluster;
    EXPECT_EQ(fabric_model(cl, SimOptions{}.efficiency, 8, 8).cpu_amd, amd) << preset;
  }
}

}  // namespace
}  // namespace tandem::sim
