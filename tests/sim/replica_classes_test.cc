// Classes of replicas under NCCL's double binary tree (sim/replica_classes.h, docs/sim.md "Replica
// classes"). The expected classes are derived by hand in the comments from the plan's rule
// (sim/collective_algorithms.cc: node j's parent in the heap tree is (j - 1) / 2; the mirror tree
// is the heap tree of position N - 1 - j; one GPU and one NIC per node, so both channels' flows,
// one up and one down per edge, cross the same NIC links and every flow has the same label).
#include <gtest/gtest.h>

#include <vector>

#include "shared/rank_grid.h"
#include "sim/collective_algorithms.h"
#include "sim/replica_classes.h"

namespace tandem::sim::testing {
namespace {

std::vector<ReplicaEdge> tree_edges(int n) {
  FabricModel f;
  f.gpus_per_node = 1;
  f.nics_per_node = 1;
  f.nvlink_bytes_s = f.nic_bytes_s = 1e9;
  std::vector<int> members;
  for (int r = 0; r < n; ++r) members.push_back(r);
  const CollectivePlan plan =
      plan_collective(CollectiveOp::kAllReduce, members, 0, 1e6, Algorithm::kTree, Granularity::kPhase, f);
  std::vector<ReplicaEdge> edges;
  add_plan_edges(plan, 0, RankGrid(n, 1, 1, 1), edges);
  return edges;
}

// Neighbours in the union of both trees (each edge both ways):
// N = 3: heap 1-0, 2-0; mirror 1-2, 0-2. 0: {1,2,2}, 1: {0,2}, 2: {0,1,0}: degrees 3,2,3; the two
//   roots' neighbours are {one of degree 2, two of degree 3} alike: {0,2} {1}.
// N = 5: heap 1-0 2-0 3-1 4-1; mirror 3-4 2-4 1-3 0-3. Degrees 0:3 1:4 2:2 3:4 4:3; 0 and 4 both
//   see {4,4,2}, 1 and 3 both {3,3,4,4}: {0,4} {1,3} {2}.
// N = 6: heap 1-0 2-0 3-1 4-1 5-2; mirror 4-5 3-5 2-4 1-4 0-3. Degrees 0:3 1:4 2:3 3:3 4:4 5:3;
//   every degree-3 node sees {3,3,4}, both degree-4 nodes {3,3,4,4}: {0,2,3,5} {1,4}.
// N = 7: heap 1-0 2-0 3-1 4-1 5-2 6-2; mirror 5-6 4-6 3-5 2-5 1-4 0-4. Degrees 0:3 1:4 2:4 3:2
//   4:4 5:4 6:3. Among the degree-4 nodes 1 and 5 see {3,2,4,4}, 2 and 4 see {3,3,4,4}: split;
//   then 0 and 6 both see {1|5, 2|4, 2|4}: {0,6} {1,5} {2,4} {3}.
// N = 8: heap 1-0 2-0 3-1 4-1 5-2 6-2 7-3; mirror 6-7 5-7 4-6 3-6 2-5 1-5 0-4. Degrees 0:3 1:4
//   2:4 3:3 4:3 5:4 6:4 7:3. Degree-4 nodes: 1 and 6 see {3,3,3,4}, 2 and 5 {3,4,4,4}: split; then
//   0 and 7 see {1|6, 2|5, 3} but 3 and 4 {1|6, 1|6, 3}: split; stable: the mirror pairs {0,7}
//   {1,6} {2,5} {3,4}.
TEST(ReplicaClasses, DoubleBinaryTreeByHand) {
  EXPECT_EQ(equitable_classes(8, tree_edges(8)), (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(equitable_classes(3, tree_edges(3)), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(equitable_classes(5, tree_edges(5)), (std::vector<int>{0, 1, 2, 1, 0}));
  EXPECT_EQ(equitable_classes(6, tree_edges(6)), (std::vector<int>{0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(equitable_classes(7, tree_edges(7)), (std::vector<int>{0, 1, 2, 3, 2, 1, 0}));
  for (int n : {3, 5, 6, 7, 8}) EXPECT_TRUE(is_equitable(equitable_classes(n, tree_edges(n)), tree_edges(n))) << n;
}

// One round (the flows on each replica's own links): N = 7 by degree only, {0,6} {1,2,4,5} {3},
// which is not equitable (1 sees the degree-2 node 3, 2 does not); N = 6's degrees are already its
// equitable classes.
TEST(ReplicaClasses, OneRoundIsTheDegreesAndNotAlwaysEquitable) {
  const std::vector<int> seven = equitable_classes(7, tree_edges(7), 1);
  EXPECT_EQ(seven, (std::vector<int>{0, 1, 1, 2, 1, 1, 0}));
  EXPECT_FALSE(is_equitable(seven, tree_edges(7)));
  EXPECT_EQ(equitable_classes(6, tree_edges(6), 1), equitable_classes(6, tree_edges(6)));
  // N = 8 by degree: {0,3,4,7} {1,2,5,6} (ReplicaFolding.AMergedPairOfReplicaClassesParts runs it).
  const std::vector<int> eight = equitable_classes(8, tree_edges(8), 1);
  EXPECT_EQ(eight, (std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0}));
  EXPECT_FALSE(is_equitable(eight, tree_edges(8)));
}

// A wrong class assignment is caught: merging two classes of the equitable partition (N = 7: the
// pairs {1,5} and {2,4}; N = 5: the middle node 2 with the pair {1,3}) is not equitable, nor is
// one class for all (N = 3: replica 1 has two tree flows a NIC link, 0 and 2 three).
TEST(ReplicaClasses, AMergedPairIsNotEquitable) {
  EXPECT_FALSE(is_equitable({0, 1, 1, 3, 1, 1, 0}, tree_edges(7)));
  EXPECT_FALSE(is_equitable({0, 1, 1, 1, 0}, tree_edges(5)));
  EXPECT_FALSE(is_equitable({0, 0, 0}, tree_edges(3)));
  // A ring (every replica sends to the next) is one class: its rotation carries it onto itself.
  std::vector<ReplicaEdge> ring;
  for (int d = 0; d < 5; ++d) ring.push_back({d, (d + 1) % 5, 7});
  EXPECT_EQ(equitable_classes(5, ring), (std::vector<int>(5, 0)));
  // A ring plus the tree: the tree's classes refined by the ring (here: every replica alone).
  std::vector<ReplicaEdge> both = tree_edges(5);
  both.insert(both.end(), ring.begin(), ring.end());
  EXPECT_EQ(equitable_classes(5, both), (std::vector<int>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace tandem::sim::testing
