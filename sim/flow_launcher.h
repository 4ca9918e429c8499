// Runs a matched network op as SimGrid flows: picks its algorithm and protocol (NcclTuner), plans
// its phases (plan_collective, plan_p2p; cached per (group, op, bytes, root)), or gives it its
// closed-form or calibrated time; starts each phase's flows, adds the phase's latency when they
// have all ended, and with tensor-parallel folding launches every tp lane's flows and checks that
// they end with lane 0's (else SimResult::fold_exact = false). A phase whose flows have their
// links to themselves is costed alone by a timer until other traffic comes to one of its links.
// It owns the flows in flight, which the event loop waits on (Comm::wait_any_for).
//
// Why separate: everything SimGrid sees of the replay goes through here; the event loop only
// learns, by timers, when an op's phase or the whole op is over.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include <simgrid/s4u.hpp>

#include "shared/schedule.h"
#include "sim/fold_planner.h"
#include "sim/lane_quotient.h"
#include "sim/nccl_tuner.h"
#include "sim/program_info.h"
#include "sim/net_op.h"
#include "sim/simulation.h"
#include "sim/timer_queue.h"

namespace tandem::sim {

class HostCollectiveProgress;

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
  // Timer::kNetFlowsDone: the flows of a phase costed alone ended (ignored when stale).
  void alone_flows_done(uint32_t op, uint32_t generation, double now);

  // The host platform: calibrated collectives progress only while their ranks poll (null: never).
  void set_polled(HostCollectiveProgress* polled) { polled_ = polled; }

  std::vector<simgrid::s4u::CommPtr>& flows() { return active_; }
  void cancel_all();
  // SimGrid has advanced its clock: note every flow in flight that has ended (its activity has a
  // finish time), so that they are handed out one by one without waiting on SimGrid again.
  void note_ended_flows();
  // The lowest index in flows() of a flow noted as ended (-1: none): the one Comm::wait_any_for
  // would return at once, in the same order (docs/sim.md "Speed of pure data parallelism").
  ssize_t ended_flow() const { return ended_.empty() ? -1 : ssize_t(*ended_.begin()); }

 private:
  struct Links {  // a flow's two links (ids: FlowLauncher::links_of)
    uint32_t up, down;
  };
  HostCollectiveProgress* polled_ = nullptr;  // sim/host_collective_progress.h
  void start_phase(uint32_t op, double now);
  // Lane quotient: the phase's orbit representatives as SimGrid flows (`now` < 0: at its start,
  // claiming every flow's links; else materializing an alone phase at `now`).
  void start_represented(uint32_t op, double now, bool materializing);
  void lane_quotient_parts(uint32_t asymmetric_op, double now);
  // Lanes of `op`'s phase parted at `since`: counted, and its window opened (SimResult).
  void mark_parted(uint32_t op, double since);
  void claim_asymmetric(uint32_t op, double now);
  struct CollectiveEntry;
  // The tuning, plan (every lane's flows) and closed-form time of a collective of `group`, cached.
  CollectiveEntry& entry_for(GroupId group, const Collective& c, uint32_t lanes);
  void phase_flows_done(uint32_t op, double now);
  void add_flow(simgrid::s4u::CommPtr c, uint32_t op, uint32_t slot, Links links);
  // A SimGrid flow for `f`, or none for a shadow (lane > 0) the flow quotient leaves out.
  simgrid::s4u::CommPtr start_flow(const Flow& f, uint64_t bytes, bool shadow);
  // Phases costed alone (docs/sim.md "Speed shortcuts"): a phase whose flows all have links of
  // their own (NVLink ports, or NIC up and down links with no shared leaf), each link carrying
  // one of its flows and no other flow, moves at the links' bandwidth: each flow takes bytes /
  // bandwidth, as SimGrid gives a lone flow, and a timer ends the phase. A flow that later comes
  // to one of its links first turns the alone phase into SimGrid flows of the bytes they have
  // left, so that the sharing from then on is SimGrid's.
  Links links_of(const Flow& f) const;
  double link_bytes_s(const Flow& f) const;
  uint64_t flow_bytes(const Flow& f, const NetOp& o) const;
  bool try_alone(uint32_t op, double now);
  void materialize(uint32_t op, double now);
  void unclaim(uint32_t op);
  void occupy(const Links& l, double now, uint32_t op);
  void release(const Links& l);

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
  // A message's tuning, plan (every lane's flows) and lane quotient, by (source, destination,
  // bytes): the same for every message between the pair (computed once, as for collectives).
  struct P2pKey {
    int32_t src, dst;
    int64_t bytes;
    bool operator==(const P2pKey&) const = default;
  };
  struct P2pKeyHash {
    size_t operator()(const P2pKey& k) const {
      return std::hash<uint64_t>()((uint64_t(uint32_t(k.src)) << 32) ^ uint64_t(uint32_t(k.dst)) ^
                                   (uint64_t(k.bytes) * 0x9e3779b97f4a7c15ull));
    }
  };
  struct P2pEntry {
    ProtocolCost cost;
    std::shared_ptr<const CollectivePlan> plan;
    std::shared_ptr<const LaneQuotientPlan> quotient;
    bool asymmetric = false;
  };
  struct CollectiveEntry {
    ProtocolCost cost;
    std::shared_ptr<const CollectivePlan> plan;  // folded lane groups: every lane's flows
    double closed_form_s = 0;                    // exclusive groups
    std::shared_ptr<const LaneQuotientPlan> quotient;     // lane quotient (null: not whole orbits of G)
    std::shared_ptr<const LaneQuotientPlan> tp_quotient;  // then: of the tp moves H (null: not either)
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
  std::unordered_map<P2pKey, P2pEntry, P2pKeyHash> p2p_cache_;
  // Flows in flight: the SimGrid activity, its op, and its slot in its lane (folded ops).
  std::vector<simgrid::s4u::CommPtr> active_;
  std::vector<uint32_t> active_op_;
  std::vector<uint32_t> active_slot_;
  std::vector<Links> active_links_;
  std::set<uint32_t> ended_;         // indices in active_ of flows that have ended, not yet handled
  std::vector<Links> shadow_links_;  // scratch
  std::vector<uint32_t> link_flows_;  // by link: SimGrid flows in flight on it
  std::vector<uint32_t> link_alone_;  // by link: the op whose alone phase uses it (UINT32_MAX: none)
  std::vector<uint32_t> link_asym_;   // by link: the op not whole orbits whose SimGrid flows use it (lane quotient)
  uint32_t generation_ = 0;
};

}  // namespace tandem::sim
