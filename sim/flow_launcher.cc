#include "sim/flow_launcher.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "shared/error.h"
#include "sim/host_collective_progress.h"

namespace tandem::sim {
namespace sg = simgrid::s4u;

namespace {

constexpr uint32_t kLateFlow = 0x80000000u;  // active_slot_: a lane m > 0 flow that outlived lane 0's
constexpr uint32_t kRepresented = 0x40000000u;  // active_slot_: an orbit's representative (lane quotient)
constexpr uint32_t kUntracked = UINT32_MAX;   // Links of a copy (PCIe): not looked at
constexpr uint32_t kNone = UINT32_MAX;

void append_flows(CollectivePlan& to, const CollectivePlan& from) {
  for (size_t i = 0; i < from.phases.size(); ++i)
    to.phases[i].flows.insert(to.phases[i].flows.end(), from.phases[i].flows.begin(), from.phases[i].flows.end());
}

}  // namespace

FlowLauncher::FlowLauncher(const Schedule& schedule, const SimOptions& options, const Platform& platform,
                           const FabricModel& fabric, NcclTuner& tuner, const FoldPlanner& layout, NetOpPool& ops,
                           TimerQueue& timers, SimResult& result)
    : schedule_(schedule),
      options_(options),
      platform_(platform),
      fabric_(fabric),
      tuner_(tuner),
      layout_(layout),
      ops_(ops),
      timers_(timers),
      result_(result) {}

void FlowLauncher::cancel_all() {
  for (auto& c : active_) c->cancel();
  active_.clear();
  active_links_.clear();
  ended_.clear();
}

void FlowLauncher::note_ended_flows() {
  // SimGrid sets an activity's finish time when its action ends, before any actor runs again; a
  // flow still in flight has -1. Reading it is no simcall.
  for (size_t i = 0; i < active_.size(); ++i)
    if (active_[i]->get_finish_time() >= 0) ended_.insert(uint32_t(i));
}

void FlowLauncher::launch(uint32_t op, double now) {
  NetOp& o = ops_[op];
  o.phase = 0;
  // Folded: everything but the unit's own tp group moves the data of every lane.
  // (Grid folding: a group inside the unit moves the data of each of its sibling groups.)
  // (Replica classes: units differ in size; a p2p joins units of one size, FoldPlanner.)
  o.lanes = o.kind == NetOp::kCollective ? layout_.op_lanes(o.group) : uint32_t(layout_.lanes(layout_.unit_of(o.src)));
  if (o.kind == NetOp::kCollective) {
    result_.collectives += o.lanes;
    const Collective& c = *o.collective;
    const auto& members = schedule_.group(o.group).ranks;
    if (members.size() <= 1 || c.bytes <= 0) return timers_.net_op_done(now, op);
    if (options_.calibration) {
      // Ranks that share the machine's cores: the collective probed in such a placement.
      const bool shared_cores = options_.calibration->host_profile() &&
                                options_.calibration->shares_cores(schedule_.world_size());
      const double measured = options_.calibration->find_collective(
          c.op, schedule_.group(o.group).kind, int(members.size()), c.bytes, o.gap_s, shared_cores);
      if (measured >= 0) {
        ++result_.calibrated_collectives;
        if (polled_) return polled_->start(op, measured, now);
        return timers_.net_op_done(now + measured, op);
      }
    }
    // Tuning, plans and the closed-form time depend only on (group, op, bytes, root): computed once.
    const bool exclusive = layout_.exclusive(o.group);
    const CollectiveEntry& entry = entry_for(o.group, c, o.lanes);
    o.cost = entry.cost;
    // Lane quotient: a plan that is not whole orbits of G is asymmetric (claim_asymmetric).
    if (layout_.lane_stride() && !exclusive) {
      o.asymmetric = !entry.quotient;
      o.quotient = o.asymmetric ? entry.tp_quotient : entry.quotient;
    }
    if (exclusive) {  // every lane's group is exclusive too (FoldPlanner::choose_fold)
      result_.closed_form_collectives += o.lanes;
      return timers_.net_op_done(now + entry.closed_form_s, op);
    }
    o.plan = entry.plan;
  } else if (o.kind == NetOp::kP2P) {
    if (o.bytes <= 0) return timers_.net_op_done(now, op);
    P2pEntry& entry = p2p_cache_[P2pKey{o.src, o.dst, o.bytes}];
    if (!entry.plan) {
      entry.cost = tuner_.choose_p2p(o.src, o.dst, double(o.bytes)).cost;
      auto plan = std::make_shared<CollectivePlan>(plan_p2p(o.src, o.dst, double(o.bytes)));
      for (uint32_t lane = 1; lane < o.lanes; ++lane)
        append_flows(*plan, plan_p2p(layout_.lane_image(o.src, lane), layout_.lane_image(o.dst, lane), double(o.bytes)));
      if (layout_.lane_stride()) {
        entry.quotient = lane_quotient(*plan, layout_, platform_);
        entry.asymmetric = !entry.quotient;
        if (entry.asymmetric && layout_.lane_moves(true) > 1) entry.quotient = lane_quotient(*plan, layout_, platform_, true);
      }
      entry.plan = std::move(plan);
    }
    o.cost = entry.cost;
    if (layout_.lane_stride()) {
      o.quotient = entry.quotient;
      o.asymmetric = entry.asymmetric;
    }
    o.plan = entry.plan;
  } else {
    if (o.bytes <= 0 || o.direction == CopyDirection::kD2D)
      return timers_.net_op_done(o.kind == NetOp::kHostMemory ? std::max(now, o.not_before_s) : now, op);
    auto plan = std::make_shared<CollectivePlan>();
    plan->phases.emplace_back();
    o.plan = plan;
  }
  start_phase(op, now);
}

bool FlowLauncher::next_phase(uint32_t op, double now) {
  NetOp& o = ops_[op];
  if (++o.phase >= o.plan->phases.size()) return true;
  start_phase(op, now);
  return false;
}

void FlowLauncher::add_flow(sg::CommPtr c, uint32_t op, uint32_t slot, Links links) {
  active_.push_back(std::move(c));
  active_op_.push_back(op);
  active_slot_.push_back(slot);
  active_links_.push_back(links);
}

void FlowLauncher::start_phase(uint32_t op, double now) {
  NetOp& o = ops_[op];
  if (o.kind == NetOp::kCopy || o.kind == NetOp::kHostMemory) {
    const bool h2d = o.direction == CopyDirection::kH2D;
    o.shadows.clear();
    for (uint32_t lane = 0; lane < o.lanes; ++lane) {
      const int rank = layout_.lane_rank(o.src, lane);
      if (lane && !layout_.simulated(rank)) {  // the image of a simulated lane's copy (flow quotient)
        o.shadows.emplace_back();
        continue;
      }
      sg::Host* cpu = platform_.cpu_of(rank);
      // A host Adam's traffic: from the rank's share of host memory through the node's memory.
      sg::Host* gpu = o.kind == NetOp::kHostMemory ? platform_.host_adam(rank) : platform_.pcie(rank);
      sg::CommPtr c = o.kind == NetOp::kHostMemory ? sg::Comm::sendto_async(gpu, cpu, uint64_t(o.bytes))
                                                   : sg::Comm::sendto_async(h2d ? cpu : gpu, h2d ? gpu : cpu, uint64_t(o.bytes));
      ++result_.simgrid_flows;
      if (lane) o.shadows.push_back(std::move(c));
      else add_flow(std::move(c), op, 0, Links{kUntracked, kUntracked});
    }
    o.outstanding = o.lanes;
    o.lane_flows = 1;
    result_.flows += o.lanes;
    return;
  }
  const CommPhase& p = o.plan->phases[o.phase];
  if (p.flows.empty()) return phase_flows_done(op, now);
  o.lane_flows = uint32_t(p.flows.size() / o.lanes);
  o.shadows.clear();
  result_.flows += p.flows.size();
  if (try_alone(op, now)) return;
  if (o.asymmetric) claim_asymmetric(op, now);
  if (o.quotient) return start_represented(op, now, false);
  uint32_t slot = 0;
  for (const Flow& f : p.flows) {
    const Links l = links_of(f);
    occupy(l, now, op);
    sg::CommPtr c = start_flow(f, flow_bytes(f, o), slot >= o.lane_flows);
    if (slot++ >= o.lane_flows) o.shadows.push_back(std::move(c));
    else add_flow(std::move(c), op, slot - 1, l);
  }
  o.outstanding = uint32_t(p.flows.size());
}

void FlowLauncher::phase_flows_done(uint32_t op, double now) {
  NetOp& o = ops_[op];
  if (o.parted_since >= 0) {
    result_.parted_window_s += now - o.parted_since;
    o.parted_since = -1;
  }
  if (o.kind == NetOp::kCopy) {
    const double latency = schedule_.scenario().cluster.pcie_latency_us * 1e-6;
    return timers_.net_op_done(now + latency, op);
  }
  if (o.kind == NetOp::kHostMemory) return timers_.net_op_done(std::max(now, o.not_before_s), op);
  const CommPhase& p = o.plan->phases[o.phase];
  double latency = p.nvlink_hops * (fabric_.nvlink_latency_s + o.cost.nvlink_hop_s) +
                   p.network_hops * (fabric_.nic_latency_s + o.cost.network_hop_s);
  if (o.kind == NetOp::kP2P && p.nvlink_hops + p.network_hops == 0) {
    const bool local = platform_.same_node(o.src, o.dst);
    latency = local ? fabric_.nvlink_latency_s + o.cost.nvlink_hop_s : fabric_.nic_latency_s + o.cost.network_hop_s;
  }
  if (o.phase == 0) latency += o.cost.base_s + pipeline_fill_s(*o.plan, fabric_, o.cost);
  timers_.net_phase_done(now + latency, op);
}

void FlowLauncher::flow_done(size_t index, double now) {
  const uint32_t op = active_op_[index];
  const uint32_t slot = active_slot_[index];
  release(active_links_[index]);
  // The last flow moves to `index`: so does its mark.
  ended_.erase(uint32_t(index));
  if (const uint32_t last = uint32_t(active_.size() - 1); last != index && ended_.erase(last)) ended_.insert(uint32_t(index));
  active_links_[index] = active_links_.back();
  active_links_.pop_back();
  active_[index] = std::move(active_.back());
  active_.pop_back();
  active_op_[index] = active_op_.back();
  active_op_.pop_back();
  active_slot_[index] = active_slot_.back();
  active_slot_.pop_back();
  NetOp& o = ops_[op];
  if (slot & kRepresented) {  // the orbit's flows end with their representative
    const CommPhase& p = o.plan->phases[o.phase];
    const LaneQuotientPhase& q = o.quotient->phases[o.phase];
    const uint32_t r = slot & ~kRepresented;
    for (uint32_t k = q.offsets[r]; k < q.offsets[r + 1]; ++k) release(links_of(p.flows[q.members[k]]));
    if (--o.outstanding == 0) phase_flows_done(op, now);
    return;
  }
  if (o.lanes > 1 && !(slot & kLateFlow)) {
    // Lane 0's flow ended: every other lane's flow in this slot must have ended at the same time
    // (FoldPlanner::choose_fold). One that is still running is waited for, one that ended earlier
    // is only noted: either way the run is not exact and simulate() runs it again unfolded.
    const double t = sg::Engine::get_clock();
    for (uint32_t lane = 1; lane < o.lanes; ++lane) {
      sg::CommPtr& c = o.shadows[(lane - 1) * o.lane_flows + slot];
      const Links l = o.kind == NetOp::kCopy || o.kind == NetOp::kHostMemory ? Links{kUntracked, kUntracked}
                                              : links_of(o.plan->phases[o.phase].flows[lane * o.lane_flows + slot]);
      if (!c) {  // the image of a simulated flow (flow quotient): it ends with lane 0's, as they do
        --o.outstanding;
        release(l);
        continue;
      }
      if (c->test()) {
        if (c->get_finish_time() != t) {
          result_.fold_exact = false;
          mark_parted(op, now - (t - c->get_finish_time()));
        }
        --o.outstanding;
        release(l);
      } else {
        result_.fold_exact = false;
        mark_parted(op, now);
        add_flow(std::move(c), op, slot | kLateFlow, l);
      }
      c = nullptr;
    }
  }
  if (--o.outstanding == 0) phase_flows_done(op, now);
}

}  // namespace tandem::sim

namespace tandem::sim {

sg::CommPtr FlowLauncher::start_flow(const Flow& f, uint64_t bytes, bool shadow) {
  if (shadow && layout_.quotient_stride() && !layout_.simulated(f.src)) {
    // Not simulated (FoldPlanner::choose_flow_quotient): its representative, a flow of a lane
    // whose tp coordinate is below the stride, is in SimGrid. The quotient needs both ends in
    // the same class; a flow that is not marks the run inexact (simulate() reruns it unfolded).
    if (layout_.simulated(f.dst)) result_.fold_exact = false, result_.fold_broken = true;
    return nullptr;
  }
  if (shadow && layout_.quotient_stride() && !layout_.simulated(f.dst)) result_.fold_exact = false, result_.fold_broken = true;
  sg::Host *a, *b;
  if (platform_.same_node(f.src, f.dst)) a = platform_.nvl(f.src), b = platform_.nvl(f.dst);
  else a = platform_.nic_of(f.src), b = platform_.nic_of(f.dst);
  ++result_.simgrid_flows;
  return sg::Comm::sendto_async(a, b, bytes);
}

FlowLauncher::Links FlowLauncher::links_of(const Flow& f) const {
  const uint32_t w = uint32_t(schedule_.world_size());
  if (platform_.same_node(f.src, f.dst)) return {2 * uint32_t(f.src), 2 * uint32_t(f.dst) + 1};
  return {2 * w + 2 * uint32_t(platform_.nic_index(f.src)), 2 * w + 2 * uint32_t(platform_.nic_index(f.dst)) + 1};
}

double FlowLauncher::link_bytes_s(const Flow& f) const {
  return platform_.same_node(f.src, f.dst) ? fabric_.nvlink_bytes_s : fabric_.nic_bytes_s;
}

uint64_t FlowLauncher::flow_bytes(const Flow& f, const NetOp& o) const {
  return uint64_t(std::max(1.0, std::llround(f.bytes / o.cost.efficiency) * 1.0));
}

void FlowLauncher::unclaim(uint32_t op) {
  for (const Flow& f : ops_[op].plan->phases[ops_[op].phase].flows) {
    const Links l = links_of(f);
    if (link_alone_[l.up] == op) link_alone_[l.up] = kNone;
    if (link_alone_[l.down] == op) link_alone_[l.down] = kNone;
  }
}

void FlowLauncher::occupy(const Links& l, double now, uint32_t op) {
  if (l.up == kUntracked || link_flows_.empty()) return;
  for (uint32_t id : {l.up, l.down}) {
    if (link_asym_[id] != kNone && link_asym_[id] != op) lane_quotient_parts(link_asym_[id], now);
    if (link_alone_[id] != kNone) materialize(link_alone_[id], now);
    ++link_flows_[id];
  }
}

void FlowLauncher::release(const Links& l) {
  if (l.up == kUntracked || link_flows_.empty()) return;
  for (uint32_t id : {l.up, l.down})
    if (--link_flows_[id] == 0) link_asym_[id] = kNone;
}

bool FlowLauncher::try_alone(uint32_t op, double now) {
  if (!options_.closed_form_uncontended || !platform_.private_routes()) return false;
  if (link_flows_.empty()) {
    const size_t links = 2 * size_t(schedule_.world_size()) + 2 * size_t(platform_.nic_index(schedule_.world_size() - 1) + 1);
    link_flows_.assign(links, 0);
    link_alone_.assign(links, kNone);
    link_asym_.assign(links, kNone);
  }
  NetOp& o = ops_[op];
  const CommPhase& p = o.plan->phases[o.phase];
  // Every link free and used by one flow of the phase; with lanes, all flows of equal length
  // (the lanes' flows in a slot must end together).
  double first = 0, end = 0;
  for (size_t i = 0; i < p.flows.size(); ++i) {
    const Links l = links_of(p.flows[i]);
    const double d = double(flow_bytes(p.flows[i], o)) / link_bytes_s(p.flows[i]);
    if (i == 0) first = d;
    if (link_flows_[l.up] || link_flows_[l.down] || link_alone_[l.up] != kNone || link_alone_[l.down] != kNone ||
        (o.lanes > 1 && d != first)) {
      for (size_t j = 0; j < i; ++j) {  // give back the links claimed so far
        const Links k = links_of(p.flows[j]);
        link_alone_[k.up] = link_alone_[k.down] = kNone;
      }
      return false;
    }
    link_alone_[l.up] = link_alone_[l.down] = op;
    end = std::max(end, d);
  }
  o.alone = true;
  o.alone_since = now;
  o.alone_end = now + end;
  o.generation = ++generation_;
  o.outstanding = uint32_t(p.flows.size());
  timers_.net_flows_done(o.alone_end, op, o.generation);
  return true;
}

void FlowLauncher::alone_flows_done(uint32_t op, uint32_t generation, double now) {
  NetOp& o = ops_[op];
  if (!o.in_use || !o.alone || o.generation != generation) return;  // stale: it got SimGrid flows
  unclaim(op);
  o.alone = false;
  o.outstanding = 0;
  phase_flows_done(op, now);
}

// A flow comes to a link of an alone phase: the phase's flows still moving become SimGrid flows
// of the bytes they have left (a lone flow has moved bandwidth * elapsed bytes). Those already
// over (a phase of unequal flows, no lanes) are done. At its very end, nothing is left to share.
void FlowLauncher::materialize(uint32_t op, double now) {
  NetOp& o = ops_[op];
  const CommPhase& p = o.plan->phases[o.phase];
  unclaim(op);
  if (now >= o.alone_end) return;  // its timer is due now and ends the phase: nothing left to share
  o.alone = false;
  o.outstanding = 0;
  if (o.asymmetric) lane_quotient_parts(op, now);
  if (o.quotient) return start_represented(op, now, true);
  uint32_t slot = 0;
  for (const Flow& f : p.flows) {
    const uint32_t s = slot++;
    const double bw = link_bytes_s(f), total = double(flow_bytes(f, o));
    const double left = total - (now - o.alone_since) * bw;
    const bool over = o.alone_since + total / bw <= now;
    if (over && o.lanes == 1) continue;
    const Links l = links_of(f);
    ++link_flows_[l.up];
    ++link_flows_[l.down];
    sg::CommPtr c = start_flow(f, uint64_t(std::max(1.0, std::llround(left) * 1.0)), s >= o.lane_flows);
    ++o.outstanding;
    if (s >= o.lane_flows) o.shadows.push_back(std::move(c));
    else add_flow(std::move(c), op, s, l);
  }
}

}  // namespace tandem::sim

namespace tandem::sim {

// An op whose flows are not whole orbits of the lanes' moves (NCCL's double binary tree over the
// replicas) leaves the lane quotient exact only while no other flow shares a link with its flows:
// costed alone, or in SimGrid whole (every lane's flows, checked lane by lane as grid folding
// does) on links nothing else uses. Max-min sharing then splits into independent parts, the op's
// and the invariant rest, which the quotient gives exactly. When a flow of another op comes to one
// of its links, or its links are not free when it starts (claim_asymmetric, occupy), the flows in
// flight are no longer invariant: neither the quotient nor the fold is provably exact, and
// simulate() runs it again without the lane quotient.
void FlowLauncher::lane_quotient_parts(uint32_t asymmetric_op, double now) {
  result_.fold_exact = false;
  result_.lane_quotient_parted = true;
  mark_parted(asymmetric_op, now);
}

void FlowLauncher::mark_parted(uint32_t op, double since) {
  ++result_.parted_meetings;
  NetOp& o = ops_[op];
  if (o.parted_since < 0 || since < o.parted_since) o.parted_since = since;
}

void FlowLauncher::claim_asymmetric(uint32_t op, double now) {
  const CommPhase& p = ops_[op].plan->phases[ops_[op].phase];
  for (const Flow& f : p.flows) {
    const Links l = links_of(f);
    for (uint32_t id : {l.up, l.down}) {
      if (link_flows_[id] || link_alone_[id] != kNone || (link_asym_[id] != kNone && link_asym_[id] != op))
        lane_quotient_parts(op, now);
      link_asym_[id] = op;
    }
  }
}

void FlowLauncher::start_represented(uint32_t op, double now, bool materializing) {
  NetOp& o = ops_[op];
  const CommPhase& p = o.plan->phases[o.phase];
  const LaneQuotientPhase& q = o.quotient->phases[o.phase];
  auto launch_rep = [&](uint32_t r, uint64_t bytes) {
    const Flow& f = p.flows[q.reps[r]];
    sg::Host *a, *b;
    if (platform_.same_node(f.src, f.dst)) a = platform_.nvl(f.src), b = platform_.nvl(q.rep_dst[r]);
    else a = platform_.nic_of(f.src), b = platform_.nic_of(q.rep_dst[r]);
    ++result_.simgrid_flows;
    add_flow(sg::Comm::sendto_async(a, b, bytes), op, r | kRepresented, Links{kUntracked, kUntracked});
    ++o.outstanding;
  };
  o.outstanding = 0;
  if (!materializing) {
    for (uint32_t i = 0; i < p.flows.size(); ++i) {
      occupy(links_of(p.flows[i]), now, op);
      if (q.rep_of_flow[i] != LaneQuotientPhase::kNotRep) launch_rep(q.rep_of_flow[i], flow_bytes(p.flows[i], o));
    }
    return;
  }
  // An alone phase meets other traffic (materialize): each orbit's flows have the bytes left that
  // its representative has (same bytes, same link bandwidth).
  for (uint32_t r = 0; r < q.reps.size(); ++r) {
    const Flow& f = p.flows[q.reps[r]];
    const double bw = link_bytes_s(f), total = double(flow_bytes(f, o));
    const double left = total - (now - o.alone_since) * bw;
    if (o.alone_since + total / bw <= now && o.lanes == 1) continue;
    for (uint32_t k = q.offsets[r]; k < q.offsets[r + 1]; ++k) {
      const Links l = links_of(p.flows[q.members[k]]);
      ++link_flows_[l.up];
      ++link_flows_[l.down];
    }
    launch_rep(r, uint64_t(std::max(1.0, std::llround(left) * 1.0)));
  }
}

}  // namespace tandem::sim

namespace tandem::sim {

FlowLauncher::CollectiveEntry& FlowLauncher::entry_for(GroupId group, const Collective& c, uint32_t lanes) {
  auto& entry = collective_cache_[CollectiveKey{group, uint8_t(c.op), c.root, c.bytes}];
  if (entry.plan) return entry;
  const auto& members = schedule_.group(group).ranks;
  const bool exclusive = layout_.exclusive(group);
  const TunedCollective tune = tuner_.choose(c.op, members, double(c.bytes));
  entry.cost = tune.cost;
  auto plan = std::make_shared<CollectivePlan>(plan_collective(c.op, members, std::max(0, c.root), double(c.bytes),
                                                               tune.algorithm, options_.granularity, fabric_));
  if (exclusive) entry.closed_form_s = uncontended_time(*plan, fabric_, entry.cost);
  if (lanes > 1 && !exclusive) {
    auto m = std::make_shared<CollectivePlan>(*plan);
    for (uint32_t lane = 1; lane < lanes; ++lane) {
      const CollectivePlan p = plan_collective(c.op, schedule_.group(layout_.lane_groups(group)[lane]).ranks,
                                               std::max(0, c.root), double(c.bytes), tune.algorithm,
                                               options_.granularity, fabric_);
      if (p.phases.size() != m->phases.size())
        throw Error("sim: internal: tensor-parallel lanes plan differently", ErrorKind::kInternal);
      append_flows(*m, p);
    }
    plan = std::move(m);
  }
  entry.plan = std::move(plan);
  if (!exclusive && layout_.lane_stride()) {
    entry.quotient = lane_quotient(*entry.plan, layout_, platform_);
    if (!entry.quotient && layout_.lane_moves(true) > 1)
      entry.tp_quotient = lane_quotient(*entry.plan, layout_, platform_, true);
  }
  return entry;
}

}  // namespace tandem::sim
