// Lone collectives against their closed forms (alpha-beta, ideal links: 300 GB/s NVLink, 25 GB/s
// NICs, 2 us per NVLink step, 5 us per network step; see sim/collective_algorithms.h):
//   ring all-reduce                2(n-1)/n * B / bw + 2(n-1) * alpha
//   ring all-gather/reduce-scatter (n-1)/n  * B / bw + (n-1)  * alpha
//   all-to-all                     (bytes one NIC or NVLink port carries) / bw + alpha
//   p2p                            B / bw + alpha
//   broadcast, reduce (pipelined chain)  B / bw + (n-1) * alpha
// Across nodes with k GPUs per node (one NIC each), the ring runs one channel per rail, each
// carrying B/k, so bw = k * 25 GB/s (NIC-bound: the NVLink load per GPU is the same volume at 300).
#include <gtest/gtest.h>

#include <cmath>

#include "sim/nccl_tuner.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

constexpr double kNvl = 300e9, kNic = 25e9, kAlphaNvl = 2e-6, kAlphaNet = 5e-6;
constexpr int64_t kBytes = int64_t(64) << 20;

double lone_collective(CollectiveOp op, const std::vector<int>& members, int world, int64_t bytes,
                       const SimOptions& o, int root = -1) {
  const ClusterSpec c = test_cluster(world);
  Schedule s = make_schedule(c, world, {members}, [=](int rank) {
    ProgramWriter w(rank);
    if (std::find(members.begin(), members.end(), rank) != members.end()) w.collective(op, 0, bytes, {}, Stream::kComm, root);
    return w.p;
  });
  const SimResult r = simulate(s, o);
  EXPECT_FALSE(r.oom);
  return r.iteration_time_s;
}

std::vector<int> range(int n, int stride = 1) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i * stride);
  return v;
}

// The four ways a collective can be simulated: closed form or flows, step or phase flows.
std::vector<SimOptions> all_paths() {
  std::vector<SimOptions> v;
  for (bool closed : {true, false})
    for (Granularity g : {Granularity::kStep, Granularity::kPhase}) {
      SimOptions o = ideal_options();
      o.closed_form_uncontended = closed;
      o.granularity = g;
      o.algorithm = Algorithm::kRing;
      v.push_back(o);
    }
  return v;
}

void expect_within_1pct(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 0.01 * want) << what;
}

TEST(CollectiveClosedForm, RingAllReduceInsideANode) {
  for (int n : {2, 4, 8})
    for (const SimOptions& o : all_paths()) {
      const double want = 2.0 * (n - 1) / n * kBytes / kNvl + 2 * (n - 1) * kAlphaNvl;
      expect_within_1pct(lone_collective(CollectiveOp::kAllReduce, range(n), 8, kBytes, o), want,
                         "n=" + std::to_string(n));
    }
}

TEST(CollectiveClosedForm, AllGatherAndReduceScatterInsideANode) {
  for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter})
    for (int n : {2, 4, 8})
      for (const SimOptions& o : all_paths()) {
        const double want = double(n - 1) / n * kBytes / kNvl + (n - 1) * kAlphaNvl;
        expect_within_1pct(lone_collective(op, range(n), 8, kBytes, o), want,
                           std::string(to_string(op)) + " n=" + std::to_string(n));
      }
}

TEST(CollectiveClosedForm, RingAcrossNodesOneChannelPerRail) {
  for (int n : {16, 32, 64})
    for (const SimOptions& o : all_paths()) {
      const double ar = 2.0 * (n - 1) / n * kBytes / (8 * kNic) + 2 * (n - 1) * kAlphaNet;
      expect_within_1pct(lone_collective(CollectiveOp::kAllReduce, range(n), n, kBytes, o), ar,
                         "all-reduce n=" + std::to_string(n));
      const double ag = double(n - 1) / n * kBytes / (8 * kNic) + (n - 1) * kAlphaNet;
      expect_within_1pct(lone_collective(CollectiveOp::kAllGather, range(n), n, kBytes, o), ag,
                         "all-gather n=" + std::to_string(n));
      expect_within_1pct(lone_collective(CollectiveOp::kReduceScatter, range(n), n, kBytes, o), ag,
                         "reduce-scatter n=" + std::to_string(n));
    }
}

TEST(CollectiveClosedForm, RingOverOneGpuPerNode) {
  // A data-parallel group of tensor-parallel ranks: one member per node, one NIC each.
  for (int nodes : {2, 4, 8})
    for (const SimOptions& o : all_paths()) {
      const double want = 2.0 * (nodes - 1) / nodes * kBytes / kNic + 2 * (nodes - 1) * kAlphaNet;
      expect_within_1pct(lone_collective(CollectiveOp::kAllReduce, range(nodes, 8), nodes * 8, kBytes, o), want,
                         "nodes=" + std::to_string(nodes));
    }
}

// The data-parallel layouts of Megatron-Core's 16B and 32B rows (tp 4 and tp 8, dp 48; docs/accuracy.md
// section 19): with tensor parallelism the fastest axis, GPU r of every node is in data-parallel group
// r % tp, so at tp 8 a node holds one member of each of 8 groups and at tp 4 two members (GPUs r and
// r + 4) of each of 4. Every group reduce-scatters B at once, as every tensor rank does in the last
// micro-batch's backward. Each GPU has its own NIC (rails), a ring with k members a node runs one
// channel per member's NIC carrying B/k, and the groups share no NIC:
//   tp 8 (N members, one a node):     (N-1)/N   * B / nic       + (N-1)  alpha
//   tp 4 (2N' members, two a node):   (M-1)/M   * B / (2 nic)   + (M-1)  alpha,  M = 2N'
// so for the same B a GPU, the one-member-a-node layout moves twice the bytes through each NIC
// (4 nodes here: 3/4 against 7/16 of B / nic).
TEST(CollectiveClosedForm, ConcurrentDataParallelRingsOnRails) {
  const int nodes = 4, world = nodes * 8;
  for (const SimOptions& o : all_paths())
    for (int tp : {8, 4}) {
      std::vector<std::vector<int>> groups(static_cast<size_t>(tp));
      for (int g = 0; g < world; ++g) groups[size_t(g % tp)].push_back(g);
      Schedule s = make_schedule(test_cluster(world), world, groups, [tp](int rank) {
        ProgramWriter w(rank);
        w.collective(CollectiveOp::kReduceScatter, GroupId(rank % tp), kBytes);
        return w.p;
      });
      const SimResult r = simulate(s, o);
      EXPECT_FALSE(r.oom);
      const int members = world / tp, per_node = 8 / tp;
      const double want = double(members - 1) / members * kBytes / (per_node * kNic) + (members - 1) * kAlphaNet;
      expect_within_1pct(r.iteration_time_s, want, "tp " + std::to_string(tp));
    }
}

TEST(CollectiveClosedForm, AllToAll) {
  for (const SimOptions& o : all_paths()) {
    for (int n : {2, 4, 8}) {  // every GPU's NVLink port carries (n-1)/n * B each way
      const double want = double(n - 1) / n * kBytes / kNvl + kAlphaNvl;
      expect_within_1pct(lone_collective(CollectiveOp::kAllToAll, range(n), 8, kBytes, o), want,
                         "n=" + std::to_string(n));
    }
    for (int n : {16, 32, 64}) {  // (n-8)/n * B leaves through each GPU's NIC, 7/n * B over NVLink
      const double want = double(n - 8) / n * kBytes / kNic + kAlphaNet;
      expect_within_1pct(lone_collective(CollectiveOp::kAllToAll, range(n), n, kBytes, o), want,
                         "n=" + std::to_string(n));
    }
  }
}

TEST(CollectiveClosedForm, BroadcastChain) {
  for (int n : {2, 4, 8})
    for (const SimOptions& o : all_paths()) {
      const double want = double(kBytes) / kNvl + (n - 1) * kAlphaNvl;
      expect_within_1pct(lone_collective(CollectiveOp::kBroadcast, range(n), 8, kBytes, o, 1), want,
                         "n=" + std::to_string(n));
    }
}

// Reduce to the root runs the chain the other way (NCCL's ring reduce): the same closed form.
TEST(CollectiveClosedForm, ReduceChain) {
  for (int n : {2, 4, 8})
    for (const SimOptions& o : all_paths()) {
      const double want = double(kBytes) / kNvl + (n - 1) * kAlphaNvl;
      expect_within_1pct(lone_collective(CollectiveOp::kReduce, range(n), 8, kBytes, o, 1), want,
                         "n=" + std::to_string(n));
    }
}

// 2D tensor parallelism's row and column broadcasts meet at a GPU that belongs to both groups:
// GPU 1 receives from 0 (group {0, 1}) and from 2 (group {2, 1}) at once, on two streams, so its
// NVLink port carries 2B and both broadcasts end at 2B / bw + alpha instead of B / bw + alpha.
TEST(CollectiveClosedForm, BroadcastsIntoOneGpuShareItsPort) {
  const ClusterSpec c = test_cluster(8);
  Schedule s = make_schedule(c, 8, {{0, 1}, {2, 1}}, [](int rank) {
    ProgramWriter w(rank);
    if (rank == 0) w.collective(CollectiveOp::kBroadcast, 0, kBytes, {}, Stream::kComm, 0);
    if (rank == 2) w.collective(CollectiveOp::kBroadcast, 1, kBytes, {}, Stream::kComm, 0);
    if (rank == 1) {
      w.collective(CollectiveOp::kBroadcast, 0, kBytes, {}, Stream::kComm, 0);
      w.collective(CollectiveOp::kBroadcast, 1, kBytes, {}, Stream::kGradComm, 0);
    }
    return w.p;
  });
  SimOptions o = ideal_options();
  o.closed_form_uncontended = false;
  expect_within_1pct(simulate(s, o).iteration_time_s, 2.0 * kBytes / kNvl + kAlphaNvl, "two broadcasts into GPU 1");
}

TEST(CollectiveClosedForm, PointToPoint) {
  for (int world : {2, 16}) {
    const int peer = world == 2 ? 1 : 8;  // NVLink, then across nodes
    const ClusterSpec c = test_cluster(world);
    Schedule s = make_schedule(c, world, {}, [=](int rank) {
      ProgramWriter w(rank);
      if (rank == 0) w.send(peer, kBytes, Stream::kSendFwd);
      if (rank == peer) w.recv(0, kBytes, Stream::kRecvFwd);
      return w.p;
    });
    const double want = world == 2 ? kBytes / kNvl + kAlphaNvl : kBytes / kNic + kAlphaNet;
    expect_within_1pct(simulate(s, ideal_options()).iteration_time_s, want, "world=" + std::to_string(world));
  }
}

TEST(CollectiveClosedForm, DoubleBinaryTreeOnFourNodes) {
  // Four nodes, one member each; the data is split over the two trees of the pair (heap tree
  // 0<-{1,2}, 1<-3 and its mirror 3<-{2,1}, 2<-0). Every node then receives 1.5 B in total
  // (e.g. node 0: B/2 from each child in the first tree, B/2 from its parent in the second) and
  // sends 1.5 B: time 1.5 B / 25 GB/s + 2 * floor(log2 4) * 5 us.
  for (bool closed : {true, false}) {
    SimOptions o = ideal_options();
    o.algorithm = Algorithm::kTree;
    o.closed_form_uncontended = closed;
    const double want = 1.5 * kBytes / kNic + 2 * 2 * kAlphaNet;
    expect_within_1pct(lone_collective(CollectiveOp::kAllReduce, range(4, 8), 32, kBytes, o), want, "tree");
  }
}

TEST(NcclTuner, TreeForSmallAllReduceAcrossManyNodesRingForLarge) {
  // Latency: the ring pays 2(n-1) network hops, the tree 2 log2(N); bandwidth: the ring's
  // 2(n-1)/n B against the tree's 2 B per NIC (see the four-node case). NCCL picks the tree for
  // small messages at scale and the ring for large ones.
  FabricModel f;
  f.gpus_per_node = 8, f.nics_per_node = 8, f.nvlink_bytes_s = kNvl, f.nic_bytes_s = kNic;
  f.nvlink_latency_s = kAlphaNvl, f.nic_latency_s = kAlphaNet;
  NcclTuner tuner(f, /*ideal=*/true);
  const std::vector<int> members = range(64, 8);  // 64 nodes, one GPU each
  EXPECT_EQ(tuner.choose(CollectiveOp::kAllReduce, members, 64 * 1024).algorithm, Algorithm::kTree);
  EXPECT_EQ(tuner.choose(CollectiveOp::kAllReduce, range(8), 64 * 1024).algorithm, Algorithm::kRing);
  // 1 GiB on the 64 nodes: ring 2*63/64 * 2^30 / 25e9 + 126 * 5 us = 85.19 ms; tree: node 1 is
  // interior in the heap tree (1.5 B in) and a leaf of the mirror (B/2 in), 2 B / 25e9 + 60 us = 85.96 ms.
  EXPECT_EQ(tuner.choose(CollectiveOp::kAllReduce, members, double(int64_t(1) << 30)).algorithm, Algorithm::kRing);
  NcclTuner forced(f, true, Algorithm::kRing);
  EXPECT_EQ(forced.choose(CollectiveOp::kAllReduce, members, 64 * 1024).algorithm, Algorithm::kRing);
}

}  // namespace
}  // namespace tandem::sim::testing
