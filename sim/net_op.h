// A network operation in the replay: a collective, a p2p message, a host<->device copy or a host
// Adam's memory traffic (a flow on the node's host memory, sim/platform_builder.h), from
// the moment its first party posts it until its last phase's flows and latency are over; and the
// pool that recycles them (ops are created and finished millions of times in a large replay).
//
// Why separate: NetOpMatcher creates and fills ops, FlowLauncher runs them, ReplayEngine finishes
// them; the op is the record they hand each other by index.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <simgrid/s4u.hpp>

#include "shared/schedule.h"
#include "sim/collective_algorithms.h"

namespace tandem::sim {

struct LaneQuotientPlan;

// A replayed state's task that takes part in an op.
struct Party {
  int32_t unit;  // the replayed state (the rank itself unless folded)
  TaskId task;
  double issued_s;
};

struct NetOp {
  enum Kind : uint8_t { kCollective, kP2P, kCopy, kHostMemory };
  Kind kind = kCollective;
  uint8_t component = 0;  // sim/cost_component.h Component, set at launch
  bool in_use = false;
  std::vector<Party> parties;
  size_t expected = 0;  // parties before it launches
  GroupId group = kNoId;
  const Collective* collective = nullptr;
  int src = 0, dst = 0;  // p2p ranks; copy, host memory: src = the GPU
  int64_t bytes = 0;
  int32_t tag = 0;
  CopyDirection direction = CopyDirection::kH2D;
  double not_before_s = 0;  // host memory: the op ends no earlier (the step's compute time)
  double gap_s = 0;  // collective, host platform: its ranks' time since their previous one (sim/collective_gaps.h)
  std::shared_ptr<const CollectivePlan> plan;
  ProtocolCost cost;
  size_t phase = 0;
  uint32_t outstanding = 0;  // flows of the phase not yet ended
  // Folded: flows of all tp lanes, lane-major, `lane_flows` per lane. Only lane 0's flows are
  // waited on; lane m's (kept in `shadows`, lane-major from lane 1) must have ended with them.
  uint32_t lanes = 1;
  uint32_t lane_flows = 0;
  std::vector<simgrid::s4u::CommPtr> shadows;
  // Lane quotient (sim/lane_quotient.h): only each orbit's representative goes to SimGrid, and the
  // orbit's flows end with it; null: every lane's flows as above.
  std::shared_ptr<const LaneQuotientPlan> quotient;
  bool asymmetric = false;  // lane quotient: not whole orbits of G (`quotient`, if any, is of H)
  // The phase's flows costed alone (FlowLauncher::try_alone): no SimGrid flow; they started at
  // `alone_since`; `alone_end` is the last one's end; `generation` tells a stale timer.
  bool alone = false;
  double alone_since = 0, alone_end = 0;
  // Lanes parted in this phase (an asymmetric op met other traffic, or a lane's flow did not end
  // with lane 0's) from this time on (-1: not); SimResult::parted_window_s sums to the phase's end.
  double parted_since = -1;
  uint32_t generation = 0;
};

class NetOpPool {
 public:
  NetOp& operator[](uint32_t op) { return ops_[op]; }
  uint32_t create() {
    uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
      ops_[id] = NetOp{};
    } else {
      id = uint32_t(ops_.size());
      ops_.emplace_back();
    }
    ops_[id].in_use = true;
    return id;
  }
  void release(uint32_t op) {
    ops_[op].in_use = false;
    ops_[op].plan.reset();
    ops_[op].quotient.reset();
    free_.push_back(op);
  }

 private:
  std::vector<NetOp> ops_;
  std::vector<uint32_t> free_;
};

}  // namespace tandem::sim
