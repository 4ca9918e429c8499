// Classes of data-parallel replicas that see the same flows (the replica-class fold,
// FoldPlanner::choose_class_fold, docs/sim.md "Replica classes"): the coarsest equitable partition
// of the replicas under the flows of the collectives that join them, as colour refinement finds it.
//
// A flow is an edge between the replicas of its two ends, labelled by everything that tells its
// links apart inside a replica (its plan and phase, and the stage and tp coordinate of both ends).
// A partition is equitable when, for every label and every pair of classes (c, c'), every replica
// of c is the source of the same number of flows into c' and the destination of the same number of
// flows from c'. Where the flows in flight are such a union (every op's plan is, and so is every
// union of them: counts add), max-min sharing gives the flows of one colour one rate (proof in
// docs/sim.md), so the replicas of one class keep one timeline.
//
// Why separate: the partition, on which the fold's exactness rests, is one function with its own
// tests, apart from the planner that builds units from it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/collective_algorithms.h"

namespace tandem {
class RankGrid;
}

namespace tandem::sim {

struct ReplicaEdge {
  int src = 0, dst = 0;  // replicas
  uint64_t label = 0;
};

// The coarsest equitable partition of `replicas` replicas under `edges`: by replica, its class,
// classes numbered in the order of their first replica.
// `rounds`: stop after that many rounds of refinement (1: classes by the labels and directions of
// the edges at each replica alone; not equitable in general).
std::vector<int> equitable_classes(int replicas, const std::vector<ReplicaEdge>& edges, int rounds = 1 << 30);
// Whether `classes` (by replica) is equitable under `edges` (the definition above).
bool is_equitable(const std::vector<int>& classes, const std::vector<ReplicaEdge>& edges);
// The flows of every phase of `plan` (ranks of `grid`) as edges between their ends' replicas,
// labelled by (plan_id, phase, each end's stage and tp coordinate). Distinct labels need
// plan_id < 2^16, phases < 2^16 and (pp * tp * sp)^2 < 2^32.
void add_plan_edges(const CollectivePlan& plan, uint32_t plan_id, const RankGrid& grid, std::vector<ReplicaEdge>& out);

}  // namespace tandem::sim
