// The lane quotient of one op's plan (FoldPlanner::lane_stride(), docs/sim.md "Lane quotient"):
// which of a phase's flows (every lane's) go to SimGrid, where each of them is routed, and which
// flows each stands for.
//
// Why separate: the check that a plan is invariant under the lanes' moves, on which the quotient's
// exactness rests, is one function with one test, apart from the launcher that runs the flows.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/collective_algorithms.h"
#include "sim/fold_planner.h"

namespace tandem::sim {

struct LaneQuotientPhase {
  static constexpr uint32_t kNotRep = UINT32_MAX;
  std::vector<uint32_t> rep_of_flow;  // by flow of the phase: its index in `reps` if it is one, else kNotRep
  std::vector<uint32_t> reps;         // the representatives' flow indices, in flow order
  std::vector<int32_t> rep_dst;       // by representative: the GPU whose (NVLink or NIC) down link it ends on
  std::vector<uint32_t> offsets;      // by representative: its orbit is members[offsets[i] .. offsets[i + 1])
  std::vector<uint32_t> members;      // flow indices of the phase (the representative's among them)
};

struct LaneQuotientPlan {
  std::vector<LaneQuotientPhase> phases;
};

// The quotient of `plan`, whose phases hold the flows of every lane of the op; null when some
// phase's flows are not whole orbits of the layout's moves (the flows in flight would not be
// invariant: the quotient would not be exact). `same_node(a, b)` tells the fabric of a flow.
// `tp_only`: the orbits of the tp moves alone (FoldPlanner::lane_moves).
std::shared_ptr<const LaneQuotientPlan> lane_quotient(const CollectivePlan& plan, const FoldPlanner& layout,
                                                      const Platform& platform, bool tp_only = false);

}  // namespace tandem::sim
