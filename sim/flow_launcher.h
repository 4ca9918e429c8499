// Runs a matched network op as SimGrid flows: picks its algorithm and protocol (NcclTuner), plans
// its phases (plan_collective, plan_p2p; cached per (group, op, bytes, root)), or gives it its
// closed-form or calibrated time; starts each phase's flows, adds the phase's latency when they
// have all ended, and with tensor-parallel folding launches every tp lane's flows and checks that
// they end with lane 0's (else SimResult::fold_exact = false). It owns the flows in flight, which
// the event loop waits on (Comm::wait_any_for).
//
// Why separate: everything SimGrid sees of the replay goes through here; the event loop only
// learns, by timers, when an op's phase or the whole op is over.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include <simgrid/s4u.hpp>

#include "shared/schedule.h"
#include "sim/fold_planner.h"
#include "sim/nccl_tuner.h"
#include "sim/net_op.h"
#include "sim/simulation.h"
#include "sim/timer_queue.h"

namespace tandem::sim {

class FlowLauncher {
 public:
  FlowLauncher(const Schedule& schedule, const SimOptions& options, const Platform& platform,
               const FabricModel& fabric, NcclTuner& tuner, const FoldPlanner& layout, NetOpPool& ops,
               TimerQueue& timers, SimResult& result);

  // Start a matched op at `now` (its parties are already accounted as communicating/offloading).
  void launch(uint32_t op, double now);
  // Timer::kNetPhaseDone: start the op's next phase; true when it has none left (the op is over).
  bool next_phase(uint32_t op, double now);
  // Flow `index` of flows() ended at `now`.
  void flow_done(size_t index, double now);
  // Timer::kNetFlowsDone: the flows of an op costed alone ended.
  void alone_flows_done(uint32_t op, double now);

  std::vector<simgrid::s4u::CommPtr>& flows() { return active_; }
  void cancel_all();

 private:
  void start_phase(uint32_t op, double now);
  void phase_flows_done(uint32_t op, double now);
  void add_flow(simgrid::s4u::CommPtr c, uint32_t op, uint32_t slot);
  // Private unit ports (docs/sim.md "Speed shortcuts"): with tensor-parallel folding, a unit's
  // NVLink ports carry only its tp group's collectives and the p2p between its lanes
  // (FoldPlanner). A p2p between its lanes that finds no other op on the ports is costed alone:
  // one flow per port at the port's bandwidth, ended by a timer (another op coming to the ports
  // before it ends makes the run inexact: SimResult::fold_exact = false).
  int port_unit(const NetOp& o) const;
  bool try_alone(uint32_t op, double now);
  void occupy_ports(uint32_t op, double now);
  void release_ports(uint32_t op);
  size_t units() const { return size_t(schedule_.world_size() / layout_.fold()); }

  struct CollectiveKey {
    GroupId group;
    uint8_t op;
    int32_t root;
    int64_t bytes;
    bool operator==(const CollectiveKey&) const = default;
  };
  struct CollectiveKeyHash {
    size_t operator()(const CollectiveKey& k) const {
      return std::hash<uint64_t>()((uint64_t(k.group) << 40) ^ (uint64_t(k.op) << 32) ^ uint64_t(uint32_t(k.root)) ^
                                   (uint64_t(k.bytes) * 0x9e3779b97f4a7c15ull));
    }
  };
  struct CollectiveEntry {
    ProtocolCost cost;
    std::shared_ptr<const CollectivePlan> plan;  // folded lane groups: every lane's flows
    double closed_form_s = 0;                    // exclusive groups
  };

  const Schedule& schedule_;
  const SimOptions& options_;
  const Platform& platform_;
  const FabricModel& fabric_;
  NcclTuner& tuner_;
  const FoldPlanner& layout_;
  NetOpPool& ops_;
  TimerQueue& timers_;
  SimResult& result_;
  std::unordered_map<CollectiveKey, CollectiveEntry, CollectiveKeyHash> collective_cache_;
  // Flows in flight: the SimGrid activity, its op, and its slot in its lane (folded ops).
  std::vector<simgrid::s4u::CommPtr> active_;
  std::vector<uint32_t> active_op_;
  std::vector<uint32_t> active_slot_;
  std::vector<uint32_t> port_ops_;    // by unit: ops with SimGrid flows on the unit's ports
  std::vector<uint32_t> alone_op_;    // by unit: the op costed alone there (UINT32_MAX: none)
};

}  // namespace tandem::sim
