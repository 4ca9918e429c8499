#include "sim/flow_launcher.h"

#include <algorithm>
#include <cmath>

#include "shared/error.h"

namespace tandem::sim {
namespace sg = simgrid::s4u;

namespace {

constexpr uint32_t kLateFlow = 0x80000000u;  // active_slot_: a lane m > 0 flow that outlived lane 0's

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
}

void FlowLauncher::launch(uint32_t op, double now) {
  NetOp& o = ops_[op];
  o.phase = 0;
  // Folded: everything but the unit's own tp group moves the data of every lane.
  o.lanes = layout_.fold() > 1 && (o.kind != NetOp::kCollective || !layout_.lane_groups(o.group).empty())
                ? uint32_t(layout_.fold())
                : 1;
  if (o.kind == NetOp::kCollective) {
    result_.collectives += o.lanes;
    const Collective& c = *o.collective;
    const auto& members = schedule_.group(o.group).ranks;
    if (members.size() <= 1 || c.bytes <= 0) return timers_.net_op_done(now, op);
    if (options_.calibration) {
      const double measured = options_.calibration->find_collective(
          c.op, schedule_.group(o.group).kind, int(members.size()), c.bytes);
      if (measured >= 0) {
        ++result_.calibrated_collectives;
        return timers_.net_op_done(now + measured, op);
      }
    }
    // Tuning, plans and the closed-form time depend only on (group, op, bytes, root): computed once.
    auto& entry = collective_cache_[CollectiveKey{o.group, uint8_t(c.op), c.root, c.bytes}];
    const bool exclusive = layout_.exclusive(o.group);
    if (!entry.plan) {
      const TunedCollective tune = tuner_.choose(c.op, members, double(c.bytes));
      entry.cost = tune.cost;
      auto plan = std::make_shared<CollectivePlan>(plan_collective(c.op, members, std::max(0, c.root), double(c.bytes),
                                                                   tune.algorithm, options_.granularity, fabric_));
      if (exclusive) entry.closed_form_s = uncontended_time(*plan, fabric_, entry.cost);
      if (o.lanes > 1 && !exclusive) {
        auto m = std::make_shared<CollectivePlan>(*plan);
        for (uint32_t lane = 1; lane < o.lanes; ++lane) {
          const CollectivePlan p = plan_collective(c.op, schedule_.group(layout_.lane_groups(o.group)[lane]).ranks,
                                                   std::max(0, c.root), double(c.bytes), tune.algorithm,
                                                   options_.granularity, fabric_);
          if (p.phases.size() != m->phases.size())
            throw Error("sim: internal: tensor-parallel lanes plan differently", ErrorKind::kInternal);
          append_flows(*m, p);
        }
        plan = std::move(m);
      }
      entry.plan = std::move(plan);
    }
    o.cost = entry.cost;
    if (exclusive) {  // every lane's group is exclusive too (FoldPlanner::choose_fold)
      result_.closed_form_collectives += o.lanes;
      return timers_.net_op_done(now + entry.closed_form_s, op);
    }
    o.plan = entry.plan;
    occupy_ports(op, now);
  } else if (o.kind == NetOp::kP2P) {
    if (o.bytes <= 0) return timers_.net_op_done(now, op);
    const TunedCollective tune = tuner_.choose_p2p(o.src, o.dst, double(o.bytes));
    o.cost = tune.cost;
    auto plan = std::make_shared<CollectivePlan>(plan_p2p(o.src, o.dst, double(o.bytes)));
    for (uint32_t lane = 1; lane < o.lanes; ++lane)
      append_flows(*plan, plan_p2p(layout_.lane_rank(o.src, lane), layout_.lane_rank(o.dst, lane), double(o.bytes)));
    o.plan = std::move(plan);
    if (try_alone(op, now)) return;
  } else {
    if (o.bytes <= 0 || o.direction == CopyDirection::kD2D) return timers_.net_op_done(now, op);
    auto plan = std::make_shared<CollectivePlan>();
    plan->phases.emplace_back();
    o.plan = plan;
  }
  start_phase(op, now);
}

bool FlowLauncher::next_phase(uint32_t op, double now) {
  NetOp& o = ops_[op];
  if (++o.phase >= o.plan->phases.size()) {
    release_ports(op);
    return true;
  }
  start_phase(op, now);
  return false;
}

void FlowLauncher::add_flow(sg::CommPtr c, uint32_t op, uint32_t slot) {
  active_.push_back(std::move(c));
  active_op_.push_back(op);
  active_slot_.push_back(slot);
}

void FlowLauncher::start_phase(uint32_t op, double now) {
  NetOp& o = ops_[op];
  if (o.kind == NetOp::kCopy) {
    const bool h2d = o.direction == CopyDirection::kH2D;
    o.shadows.clear();
    for (uint32_t lane = 0; lane < o.lanes; ++lane) {
      sg::Host* gpu = platform_.pcie(o.src + int(lane));
      sg::Host* cpu = platform_.cpu_of(o.src + int(lane));
      sg::CommPtr c = sg::Comm::sendto_async(h2d ? cpu : gpu, h2d ? gpu : cpu, uint64_t(o.bytes));
      if (lane) o.shadows.push_back(std::move(c));
      else add_flow(std::move(c), op, 0);
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
  uint32_t slot = 0;
  for (const Flow& f : p.flows) {
    sg::Host *a, *b;
    if (platform_.same_node(f.src, f.dst)) a = platform_.nvl(f.src), b = platform_.nvl(f.dst);
    else a = platform_.nic_of(f.src), b = platform_.nic_of(f.dst);
    const double bytes = f.bytes / o.cost.efficiency;
    sg::CommPtr c = sg::Comm::sendto_async(a, b, uint64_t(std::max(1.0, std::llround(bytes) * 1.0)));
    if (slot++ >= o.lane_flows) o.shadows.push_back(std::move(c));
    else add_flow(std::move(c), op, slot - 1);
  }
  o.outstanding = uint32_t(p.flows.size());
  result_.flows += p.flows.size();
}

void FlowLauncher::phase_flows_done(uint32_t op, double now) {
  NetOp& o = ops_[op];
  if (o.kind == NetOp::kCopy) {
    const double latency = schedule_.scenario().cluster.pcie_latency_us * 1e-6;
    return timers_.net_op_done(now + latency, op);
  }
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
  active_[index] = std::move(active_.back());
  active_.pop_back();
  active_op_[index] = active_op_.back();
  active_op_.pop_back();
  active_slot_[index] = active_slot_.back();
  active_slot_.pop_back();
  NetOp& o = ops_[op];
  if (o.lanes > 1 && !(slot & kLateFlow)) {
    // Lane 0's flow ended: every other lane's flow in this slot must have ended at the same time
    // (FoldPlanner::choose_fold). One that is still running is waited for, one that ended earlier
    // is only noted: either way the run is not exact and simulate() runs it again unfolded.
    const double t = sg::Engine::get_clock();
    for (uint32_t lane = 1; lane < o.lanes; ++lane) {
      sg::CommPtr& c = o.shadows[(lane - 1) * o.lane_flows + slot];
      if (c->test()) {
        if (c->get_finish_time() != t) result_.fold_exact = false;
        --o.outstanding;
      } else {
        result_.fold_exact = false;
        add_flow(std::move(c), op, slot | kLateFlow);
      }
      c = nullptr;
    }
  }
  if (--o.outstanding == 0) phase_flows_done(op, now);
}

}  // namespace tandem::sim

namespace tandem::sim {

int FlowLauncher::port_unit(const NetOp& o) const {
  const int fold = layout_.fold();
  if (fold <= 1 || !options_.closed_form_uncontended) return -1;
  if (o.kind == NetOp::kP2P) return layout_.same_unit(o.src, o.dst) ? o.src / fold : -1;
  if (o.kind == NetOp::kCollective && o.lanes == 1 && layout_.parties(o.group) == 1 && !layout_.exclusive(o.group))
    return schedule_.group(o.group).ranks.front() / fold;  // the unit's own tp group
  return -1;
}

bool FlowLauncher::try_alone(uint32_t op, double now) {
  NetOp& o = ops_[op];
  const int u = port_unit(o);
  if (u < 0) return false;
  if (port_ops_.empty()) port_ops_.assign(units(), 0), alone_op_.assign(units(), UINT32_MAX);
  if (port_ops_[u] || alone_op_[u] != UINT32_MAX || o.plan->phases.size() != 1) {
    occupy_ports(op, now);
    return false;
  }
  // One flow per lane, lane m from port m to port m + d (mod tp): each port carries one flow.
  const Flow& f = o.plan->phases[0].flows.front();
  const double bytes = double(uint64_t(std::max(1.0, std::llround(f.bytes / o.cost.efficiency) * 1.0)));
  o.port_unit = u;
  o.alone = true;
  o.alone_end = now + bytes / fabric_.nvlink_bytes_s;
  o.lane_flows = 1;
  o.outstanding = o.lanes;
  alone_op_[u] = op;
  result_.flows += o.plan->phases[0].flows.size();
  timers_.net_flows_done(o.alone_end, op);
  return true;
}

void FlowLauncher::alone_flows_done(uint32_t op, double now) {
  NetOp& o = ops_[op];
  o.alone = false;
  alone_op_[o.port_unit] = UINT32_MAX;
  o.port_unit = -1;
  o.outstanding = 0;
  phase_flows_done(op, now);
}

// An op with SimGrid flows comes to a unit's ports. If an op costed alone is still moving there,
// its cost was not exact: the run is marked so, and simulate() runs it again unfolded (this does
// not happen with the generated schedules: a unit's tp collectives and its ring exchanges are
// ordered by their dependencies).
void FlowLauncher::occupy_ports(uint32_t op, double now) {
  NetOp& o = ops_[op];
  const int u = port_unit(o);
  if (u < 0) return;
  if (port_ops_.empty()) port_ops_.assign(units(), 0), alone_op_.assign(units(), UINT32_MAX);
  o.port_unit = u;
  ++port_ops_[u];
  const uint32_t a = alone_op_[u];
  if (a != UINT32_MAX && now < ops_[a].alone_end) result_.fold_exact = false;
}

void FlowLauncher::release_ports(uint32_t op) {
  NetOp& o = ops_[op];
  if (o.port_unit >= 0 && !o.alone) --port_ops_[o.port_unit];
  o.port_unit = -1;
}

}  // namespace tandem::sim
