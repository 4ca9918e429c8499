// Prints the simulator's all-reduce times on one 8-GPU node against nccl-tests measurements
// (traces/reference/nccl_allreduce_8xa100.tsv, nccl_allreduce_8xh200.tsv; sources in their first
// lines) for docs/sim.md, and likewise multi-node all-reduce bus bandwidth
// (nccl_busbw_fabrics.tsv) and host copies over PCIe (the H200 file's header). Nothing is asserted
// about the errors: the efficiencies are fit on these curves as a whole (docs/sim.md), and a test
// asserting them back would be circular.
//
// Each comparison is also printed as one machine-readable line,
//   residual<TAB>component<TAB>source<TAB>what<TAB>measured_s<TAB>tandem_s
// which tests/bench/fit_prediction_intervals.py reads to fit the prediction intervals'
// residuals of the nvlink, nic and pcie components (sim/data/component_residuals.tsv).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

std::vector<std::pair<double, double>> bytes_and_us(const std::string& file, bool has_time) {
  std::ifstream in(std::string(TANDEM_SOURCE_DIR) + "/traces/reference/" + file);
  std::vector<std::pair<double, double>> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::istringstream ls(line);
    double bytes, a, b;
    ls >> bytes >> a >> b;
    // A100 file: bytes time_us algbw busbw; H200 file: bytes busbw algbw (time = bytes / algbw).
    rows.push_back({bytes, has_time ? a : bytes / (b * 1e9) * 1e6});
  }
  return rows;
}

void residual_line(const char* component, const std::string& source, const std::string& what, double measured_s,
                   double tandem_s) {
  std::printf("residual\t%s\t%s\t%s\t%.9g\t%.9g\n", component, source.c_str(), what.c_str(), measured_s, tandem_s);
}

ClusterSpec cluster(const char* preset, int gpus) {
  return load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                       {std::string("cluster.preset=") + preset, "cluster.gpus=" + std::to_string(gpus),
                        "strategy.global_batch=" + std::to_string(2 * gpus)})
      .cluster;
}

void compare(const char* preset, const std::string& file, bool has_time) {
  const ClusterSpec cl = cluster(preset, 8);
  std::vector<double> errs;
  std::printf("%s all-reduce, 8 GPUs\n%14s %12s %12s %8s\n", preset, "bytes", "measured_us", "tandem_us", "error");
  for (auto [bytes, us] : bytes_and_us(file, has_time)) {
    const int64_t b = int64_t(bytes);
    Schedule s = make_schedule(cl, 8, {{0, 1, 2, 3, 4, 5, 6, 7}}, [b](int rank) {
      ProgramWriter w(rank);
      w.collective(CollectiveOp::kAllReduce, 0, b);
      return w.p;
    });
    const double t = simulate(s).iteration_time_s * 1e6;
    ASSERT_TRUE(std::isfinite(t) && t > 0);
    const double e = (t - us) / us;
    errs.push_back(std::fabs(e));
    std::printf("%14.0f %12.1f %12.1f %+7.1f%%\n", bytes, us, t, 100 * e);
    residual_line("nvlink", file, std::string(preset) + " all-reduce 8 GPUs " + std::to_string(b) + " B", us * 1e-6,
                  t * 1e-6);
  }
  std::sort(errs.begin(), errs.end());
  std::printf("median |error| %.1f %%, worst %.1f %%\n\n", 100 * errs[errs.size() / 2], 100 * errs.back());
}

TEST(NcclReference, AllReduceOnOneNodePrintsErrors) {
  compare("dgx-a100-80g", "nccl_allreduce_8xa100.tsv", true);
  compare("hgx-h200", "nccl_allreduce_8xh200.tsv", false);
}

// Multi-node all-reduce bus bandwidth at large messages (nccl_busbw_fabrics.tsv, "NVLink3 +
// 8x200Gb RDMA (DGX A100)" 192 GB/s, "NVLink4 + 8x400Gb RDMA (DGX H100)" 380 GB/s): the source
// gives no node count; two nodes (16 GPUs) and 4 GiB here. busbw = bytes / time * 2 (n - 1) / n
// (nccl-tests' definition), so the measured time is bytes * 2 (n - 1) / n / busbw.
TEST(NcclReference, AllReduceAcrossNodesPrintsBusBandwidth) {
  const int64_t bytes = int64_t(4) << 30;
  const int n = 16;
  for (auto [preset, busbw_gbps] : {std::pair{"dgx-a100-80g", 192.0}, std::pair{"dgx-h100", 380.0}}) {
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i) all[size_t(i)] = i;
    Schedule s = make_schedule(cluster(preset, n), n, {all}, [bytes](int rank) {
      ProgramWriter w(rank);
      w.collective(CollectiveOp::kAllReduce, 0, bytes);
      return w.p;
    });
    const double t = simulate(s).iteration_time_s;
    ASSERT_TRUE(std::isfinite(t) && t > 0);
    const double factor = 2.0 * (n - 1) / n;
    const double measured = double(bytes) * factor / (busbw_gbps * 1e9);
    std::printf("%s all-reduce, 2 nodes: busbw measured %.1f GB/s, tandem %.1f GB/s (%+.1f%%)\n", preset, busbw_gbps,
                double(bytes) * factor / t / 1e9, 100 * (measured / t - 1));
    residual_line("nic", "nccl_busbw_fabrics.tsv", std::string(preset) + " all-reduce 16 GPUs busbw", measured, t);
    // NCCL 2.18's model takes the ring at 4 GiB on two nodes (NcclTunerModel.TwoA100Nodes*), and a
    // ring's bus bandwidth cannot exceed what the node's 8 NICs carry: 8 x the preset's NIC
    // bandwidth x the fitted NIC efficiency (191.0 GB/s on DGX A100, 382.0 on DGX H100). The
    // tuner that priced plans physically took the tree here and printed 248.7 GB/s on DGX A100.
    const ClusterSpec cl = cluster(preset, n);
    EXPECT_LE(double(bytes) * factor / t, 8 * cl.nic_bandwidth_gbps * 1e9 * SimOptions{}.efficiency.nic) << preset;
  }
}

// One GPU a node in each ring (the data-parallel groups at tp 8): nccl_busbw_fabrics.tsv's "400Gb
// RDMA (IB/RoCE), 1 NIC" 48 GB/s is what one NIC carries, and a DGX H100 runs eight such rings at
// once, one on each rail. busbw = bytes * (n - 1) / n / time for a reduce-scatter (4 GiB in), twice
// that for an all-reduce (nccl-tests' definitions). Printed for docs/accuracy.md (section 13); asserted:
// a reduce-scatter has only the ring in NCCL, so its bus bandwidth cannot exceed one NIC's, the
// preset's 50 GB/s times the fitted NIC efficiency (SimOptions::efficiency.nic).
TEST(NcclReference, OneGpuANodeRingsPrintBusBandwidth) {
  const int64_t bytes = int64_t(4) << 30;
  const double nic_limit = 50e9 * SimOptions{}.efficiency.nic;
  for (int nodes : {2, 8, 48}) {
    const int world = 8 * nodes;
    std::vector<std::vector<int>> rails(8);
    for (int g = 0; g < world; ++g) rails[size_t(g % 8)].push_back(g);
    for (CollectiveOp op : {CollectiveOp::kReduceScatter, CollectiveOp::kAllReduce}) {
      Schedule s = make_schedule(cluster("dgx-h100", world), world, rails, [bytes, op](int rank) {
        ProgramWriter w(rank);
        w.collective(op, GroupId(rank % 8), bytes);
        return w.p;
      });
      const double t = simulate(s).iteration_time_s;
      ASSERT_TRUE(std::isfinite(t) && t > 0);
      const bool all_reduce = op == CollectiveOp::kAllReduce;
      const double busbw = double(bytes) * (all_reduce ? 2.0 : 1.0) * (nodes - 1) / nodes / t;
      std::printf("dgx-h100 %s, %d nodes, 8 rail rings of one GPU a node: busbw %.1f GB/s (one NIC measured 48)\n",
                  all_reduce ? "all-reduce" : "reduce-scatter", nodes, busbw / 1e9);
      if (!all_reduce) {
        EXPECT_LE(busbw, nic_limit * (1 + 1e-9)) << nodes << " nodes";
      }
    }
  }
}

// Host copies over PCIe on H200 (nccl_allreduce_8xh200.tsv header: PCIe5 x16 H2D 55.43 GB/s,
// D2H 55.06 GB/s), 1 GiB each way.
TEST(NcclReference, HostCopiesPrintErrors) {
  const int64_t bytes = int64_t(1) << 30;
  for (auto [direction, gbps, name] : {std::tuple{CopyDirection::kH2D, 55.43, "H2D"},
                                       std::tuple{CopyDirection::kD2H, 55.06, "D2H"}}) {
    Schedule s = make_schedule(cluster("hgx-h200", 8), 1, {}, [bytes, direction](int rank) {
      ProgramWriter w(rank);
      const BufferId host = w.buffer("host", bytes, Placement::kHost);
      const BufferId dev = w.buffer("dev", bytes);
      const TaskId a = w.alloc(host);
      const TaskId b = w.alloc(dev, {a});
      Copy c;
      c.direction = direction;
      c.bytes = bytes;
      c.src = direction == CopyDirection::kH2D ? host : dev;
      c.dst = direction == CopyDirection::kH2D ? dev : host;
      w.add(direction == CopyDirection::kH2D ? Stream::kH2D : Stream::kD2H, c, {b});
      return w.p;
    });
    const double t = simulate(s).iteration_time_s;
    ASSERT_TRUE(std::isfinite(t) && t > 0);
    const double measured = double(bytes) / (gbps * 1e9);
    std::printf("hgx-h200 %s copy 1 GiB: measured %.1f GB/s, tandem %.1f GB/s\n", name, gbps, double(bytes) / t / 1e9);
    residual_line("pcie", "nccl_allreduce_8xh200.tsv", std::string("hgx-h200 ") + name + " copy 1 GiB", measured, t);
  }
}

}  // namespace
}  // namespace tandem::sim::testing
