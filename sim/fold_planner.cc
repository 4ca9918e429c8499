#include "sim/fold_planner.h"

#include <algorithm>

#include <set>
#include <tuple>

#include "shared/rank_grid.h"
#include "sim/nccl_tuner.h"
#include "sim/replica_classes.h"

namespace tandem::sim {

FoldShape FoldShape::of(const Platform& platform) {
  return {platform.gpus_per_node(), platform.nics_per_node(), platform.private_routes()};
}

FoldShape FoldShape::of(const ClusterSpec& cluster, int world_size, const FabricShape& fabric) {
  return {std::max(1, cluster.gpus_per_node), std::max(1, cluster.nics_per_node),
          !Platform::has_leaves(cluster, world_size, fabric)};
}

// The layout-level conditions of each fold (the reasons are written at choose_grid_fold,
// choose_fold, choose_replica_fold, choose_lane_quotient and choose_flow_quotient, which start
// from this answer and then check the programs).
LayoutFold FoldPlanner::layout_fold(const Schedule& schedule, const SimOptions& o, const FoldShape& shape) {
  LayoutFold f;
  if (!o.closed_form_uncontended || !o.share_class_programs) return f;
  const int n = schedule.world_size();
  const RankGrid& grid = schedule.grid();
  const int D = grid.dp(), P = grid.pp(), T = grid.tp();
  const int gpn = shape.gpus_per_node, nics = shape.nics_per_node, k = shape.gpus_per_nic();
  const bool generated = grid.sp() == 1 && grid.size() == n;
  // The tp lanes share NICs alike: k GPUs per NIC divides tp, or tp divides k.
  const bool nics_alike = nics >= gpn || (gpn % nics == 0 && (T % k == 0 || k % T == 0));
  if (o.fold_tensor_parallel && T > 1 && generated && n % T == 0 && gpn % T == 0 && nics_alike) f.tensor_fold = T;
  if (o.fold_data_parallel && generated && D >= 2 && (T > 1 || P > 1) && (T == 1 || o.fold_tensor_parallel) &&
      shape.private_routes && gpn % T == 0 && (P * T) % gpn == 0 && nics_alike) {
    f.kind = LayoutFold::Kind::kGrid;
    f.fold = D * T;
    const int s = T % k == 0 ? k : (k % T == 0 ? T : 0);
    if (o.fold_flows && o.fold_lanes && s > 0 && f.fold / s > 1) f.lane_stride = s;
  } else if (T <= 1) {
    if (o.fold_data_parallel && n >= 2 && generated && P == 1 && D == n) {
      f.kind = LayoutFold::Kind::kReplica;
      f.fold = n;
    }
  } else if (f.tensor_fold > 1) {
    f.kind = LayoutFold::Kind::kTensor;
    f.fold = T;
  }
  if (o.fold_flows && (f.kind == LayoutFold::Kind::kGrid || f.tensor_fold > 1) && T > 1 && T % k == 0 && k < T &&
      shape.private_routes)
    f.flow_stride = k;
  return f;
}

FoldPlanner::FoldPlanner(const Schedule& schedule, const SimOptions& options, const Platform& platform,
                         const std::vector<std::shared_ptr<ProgramInfo>>& infos, NcclTuner* tuner,
                         const FabricModel* fabric)
    : schedule_(schedule),
      options_(options),
      platform_(platform),
      shape_(FoldShape::of(platform)),
      allowed_(layout_fold(schedule, options, shape_)),
      infos_(infos),
      tuner_(tuner),
      fabric_(fabric) {
  scan_exclusive_groups();
  fold_ = choose_class_fold();
  // simulate() asks for replica classes after a grid-folded run parted: not grid folding again.
  if (fold_ == 1 && options_.replica_class_rounds <= 0) fold_ = choose_grid_fold();
  if (fold_ == 1) fold_ = choose_fold();
  if (grid_ && unit_begin_.empty())  // grid folding: units of fold_ lanes each
    for (int u = 0; u <= schedule_.world_size() / fold_; ++u) unit_begin_.push_back(u * fold_);
  units_ = grid_ ? int(unit_begin_.size()) - 1 : schedule_.world_size() / fold_;
  if (lane_groups_.empty()) lane_groups_.resize(schedule_.groups().size());
  count_parties();
  lane_stride_ = choose_lane_quotient();
  quotient_stride_ = choose_flow_quotient();
}

std::vector<std::pair<int, int>> FoldPlanner::unit_nodes(int unit) const {
  std::vector<std::pair<int, int>> out;
  for (int lane = 0; lane < lanes(unit); ++lane) {
    const int node = platform_.node_of(member(unit, lane));
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == node; });
    if (it == out.end()) out.emplace_back(node, 1);
    else ++it->second;
  }
  std::sort(out.begin(), out.end());
  return out;
}

void FoldPlanner::scan_exclusive_groups() {
  const auto& groups = schedule_.groups();
  const int n = schedule_.world_size();
  group_exclusive_.assign(groups.size(), 0);
  group_unit_private_.assign(groups.size(), 0);
  // Per program: the groups it runs collectives on (and whether on more than one stream), its peers.
  for (const auto& info : infos_) {
    if (usage_.count(info.get())) continue;
    Usage& u = usage_[info.get()];
    for (const Task& t : info->program.tasks) {
      if (const auto* c = std::get_if<Collective>(&t.op)) {
        auto [it, fresh] = u.group_stream.emplace(c->group, int(t.stream));
        if (!fresh && it->second != int(t.stream)) it->second = -1;
      } else if (const auto* s = std::get_if<SendRecv>(&t.op)) {
        u.peers.push_back(s->peer);
      }
    }
    std::sort(u.peers.begin(), u.peers.end());
    u.peers.erase(std::unique(u.peers.begin(), u.peers.end()), u.peers.end());
  }
  if (!options_.closed_form_uncontended) return;
  constexpr int64_t kNone = -1, kMany = -2, kP2p = int64_t(1) << 40;
  std::vector<int64_t> user(n, kNone);  // the one user of each GPU's NVLink links
  // The same, but a p2p message between two ranks of one aligned tp block counts as that block's
  // tp group (strategy.tp_comm_overlap's ring exchanges): a tp group whose ports carry only its own
  // collectives and such messages may still be folded (choose_fold), though not closed-form.
  std::vector<int64_t> unit_user(n, kNone);
  const RankGrid& grid = schedule_.grid();
  const int T = grid.tp() > 1 && grid.sp() == 1 && grid.size() == n && n % grid.tp() == 0 ? grid.tp() : 1;
  std::vector<uint8_t> multi_stream(groups.size(), 0);
  auto use_of = [&](std::vector<int64_t>& of, int gpu, int64_t who) {
    if (of[gpu] == kNone) of[gpu] = who;
    else if (of[gpu] != who) of[gpu] = kMany;
  };
  auto use = [&](int gpu, int64_t who) {
    use_of(user, gpu, who);
    use_of(unit_user, gpu, who);
  };
  for (int rank = 0; rank < n; ++rank) {
    const ProgramInfo* info = infos_[rank].get();
    const bool translate = info->program.rank != rank;
    const Usage& u = usage_[info];
    for (const auto& [g_rep, stream] : u.group_stream) {
      const GroupId g = translate ? schedule_.group_for(rank, g_rep) : g_rep;
      if (g >= groups.size()) continue;
      if (stream < 0) multi_stream[g] = 1;
      for (int m : groups[g].ranks)
        if (m != rank && platform_.same_node(m, rank)) {
          use(rank, g);
          break;
        }
    }
    for (int p_rep : u.peers) {
      const int p = translate ? schedule_.peer_for(rank, p_rep) : p_rep;
      if (p < 0 || p >= n || !platform_.same_node(p, rank)) continue;
      use_of(user, rank, kP2p), use_of(user, p, kP2p);
      if (T > 1 && p / T == rank / T) {
        const int64_t tg = schedule_.group_of(rank, GroupKind::kTp, 0);
        use_of(unit_user, rank, tg), use_of(unit_user, p, tg);
      } else {
        use_of(unit_user, rank, kP2p), use_of(unit_user, p, kP2p);
      }
    }
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& m = groups[g].ranks;
    bool ok = !m.empty() && !multi_stream[g];
    for (int r : m) ok = ok && r < n && platform_.same_node(r, m.front()) && user[r] == int64_t(g);
    group_exclusive_[g] = ok;
    bool own = !m.empty() && !multi_stream[g];
    for (int r : m) own = own && r < n && platform_.same_node(r, m.front()) && unit_user[r] == int64_t(g);
    group_unit_private_[g] = own;
  }
}

// Tensor-parallel folding is taken only where every tp lane of a unit provably sees the same
// timeline: one class program for the whole unit, the unit's tp group closed-form or its NVLink
// ports carrying nothing but the group's collectives and p2p between the unit's lanes (the ring
// exchanges of strategy.tp_comm_overlap, lane m's peer lane m + d mod tp), every other group the
// unit uses translated lane by lane (lane m's group = lane 0's group shifted by m ranks), every
// peer outside the unit a unit's lane 0, and a platform the lanes look alike on (the unit inside one
// node; its GPUs' NICs a lane permutation cannot tell apart). Then the flows of lane m are lane
// 0's translated by m ranks through a symmetric fabric, and SimGrid's max-min sharing gives them
// the same rates; the replay also checks this as it runs (a phase whose lanes' flows do not end
// together sets SimResult::fold_exact = false and simulate() runs again unfolded).
int FoldPlanner::choose_fold() {
  const int n = schedule_.world_size();
  const int T = schedule_.grid().tp();
  if (allowed_.kind == LayoutFold::Kind::kReplica) return choose_replica_fold();
  if (allowed_.tensor_fold <= 1) return 1;
  const auto& groups = schedule_.groups();
  std::vector<std::vector<GroupId>> lanes(groups.size());
  std::vector<uint8_t> internal(groups.size(), 0);
  for (int b = 0; b < n; b += T) {
    const ProgramInfo* info = infos_[b].get();
    for (int m = 1; m < T; ++m)
      if (infos_[b + m].get() != info || schedule_.representative_of(b + m) != schedule_.representative_of(b)) return 1;
    const GroupId tg = schedule_.group_of(b, GroupKind::kTp, 0);
    if (tg >= groups.size() || !group_unit_private_[tg] || int(groups[tg].ranks.size()) != T) return 1;
    for (int m = 0; m < T; ++m)
      if (groups[tg].ranks[m] != b + m) return 1;
    const bool translate = info->program.rank != b;
    const Usage& u = usage_[info];
    for (const auto& entry : u.group_stream) {
      const GroupId g_rep = entry.first;
      const GroupId g0 = translate ? schedule_.group_for(b, g_rep) : g_rep;
      if (g0 >= groups.size()) return 1;
      const auto& r0 = groups[g0].ranks;
      if (g0 == tg) {
        for (int m = 1; m < T; ++m)
          if (schedule_.group_for(b + m, g_rep) != tg) return 1;
        internal[g0] = 1;
        continue;
      }
      std::vector<GroupId> gl(T);
      for (int m = 0; m < T; ++m) {
        gl[m] = schedule_.group_for(b + m, g_rep);
        if (gl[m] >= groups.size() || groups[gl[m]].ranks.size() != r0.size() ||
            group_exclusive_[gl[m]] != group_exclusive_[g0])
          return 1;
        for (size_t i = 0; i < r0.size(); ++i)
          if (r0[i] % T || groups[gl[m]].ranks[i] != r0[i] + m) return 1;
      }
      if (!lanes[g0].empty() && lanes[g0] != gl) return 1;
      lanes[g0] = std::move(gl);
    }
    for (int p_rep : u.peers) {
      const int p = translate ? schedule_.peer_for(b, p_rep) : p_rep;
      if (p < 0 || p >= n) return 1;
      if (p / T == b / T) {  // a peer in the unit: lane m's is lane m + d's, d = p - b (mod T)
        for (int m = 1; m < T; ++m)
          if (schedule_.peer_for(b + m, p_rep) != b + (p - b + m) % T) return 1;
        continue;
      }
      if (p % T) return 1;
      for (int m = 1; m < T; ++m)
        if (schedule_.peer_for(b + m, p_rep) != p + m) return 1;
    }
  }
  for (size_t g = 0; g < groups.size(); ++g)
    if (internal[g] && !lanes[g].empty()) return 1;
  lane_groups_ = std::move(lanes);
  return T;
}

// Replica folding is taken only where every rank provably sees the same timeline and the one
// state launches exactly the flows of all ranks: a pure data-parallel grid (tp = pp = sp = 1, dp =
// the world, ranks 0..n-1 one contiguous unit), one class program for every rank, no p2p, and every
// group the program uses is, for every rank, the same group (the data-parallel group of the whole
// world, whatever its member order). Then every rank posts the same collective at the same time,
// so each collective is internal to the unit (parties 1) and launches its whole plan, every
// member's flows, as the unfolded replay does once the last member has posted; every copy
// launches one flow per GPU on that GPU's own PCIe link (lanes, lane m = rank m), which no other
// GPU's copy shares (the host end has no link), so lane m's copy ends with lane 0's (checked as it
// runs, as for tensor-parallel lanes). The replay's flows are the unfolded replay's, flow for flow.
int FoldPlanner::choose_replica_fold() {
  if (allowed_.kind != LayoutFold::Kind::kReplica) return 1;
  const int n = schedule_.world_size();
  const ProgramInfo* info = infos_[0].get();
  for (int r = 1; r < n; ++r)
    if (infos_[r].get() != info) return 1;
  const Usage& u = usage_[info];
  if (!u.peers.empty()) return 1;
  const auto& groups = schedule_.groups();
  for (const auto& entry : u.group_stream) {
    const GroupId g_rep = entry.first;
    const GroupId g0 = info->program.rank != 0 ? schedule_.group_for(0, g_rep) : g_rep;
    if (g0 >= groups.size() || int(groups[g0].ranks.size()) != n) return 1;
    for (int r = 1; r < n; ++r)
      if ((info->program.rank != r ? schedule_.group_for(r, g_rep) : g_rep) != g0) return 1;
  }
  return n;
}

// The replica-class fold (docs/sim.md "Replica classes"): where grid folding's replicas part
// (SimOptions::replica_class_rounds, set by simulate() after a grid-folded run parted), one state per
// (pipeline stage s, class c of replicas), its lanes the ranks (d, s, m) of the replicas d of c in
// ascending order and every tp coordinate m: lane i * tp + m. The classes are the coarsest
// equitable partition (sim/replica_classes.h) of the replicas under the flows of every collective
// a stage runs on a group joining replicas, planned for every lane's group with the algorithm the
// replay's tuner gives it: the ring over the replicas makes every class one (no class then), NCCL's
// double binary tree splits them by their places in its two heap trees. Taken only where:
// - grid folding's layout conditions hold (FoldPlanner::layout_fold: a replica on whole nodes, tp
//   blocks inside nodes, NICs alike, private routes) and one class program serves every rank of a
//   stage (as grid folding);
// - every group a unit's state names is, for lane 0, inside the unit (a replica's tp group: each
//   lane's group a sibling moved by a whole replica, the siblings partitioning the unit, as grid
//   folding), inside its stage across the units (the data-parallel group: each lane's group a tp
//   move of lane 0's; every unit of the stage names the same lane-0 group, so the units match it as
//   parties and the last to post launches every sibling's plan, every replica's flows), or across
//   stages with every member lane 0 of a unit of the same lane count and lane l's group lane l of
//   each member's unit (as grid folding);
// - every p2p peer is lane 0 of another unit of the same lane count, lane l's peer its lane l.
// The lane quotient is not taken (its moves are whole replicas); the flow quotient (tp moves) is.
// Every lane's flows go to SimGrid, and the replay checks that each lane's flows end with lane
// 0's (a run whose lanes part is run again with the tp lanes alone folded).
int FoldPlanner::choose_class_fold() {
  if (!options_.fold_replica_classes || options_.replica_class_rounds <= 0 || !tuner_ || !fabric_) return 1;
  if (allowed_.kind != LayoutFold::Kind::kGrid) return 1;  // FoldPlanner::layout_fold
  const int n = schedule_.world_size();
  const RankGrid& grid = schedule_.grid();
  const int D = grid.dp(), P = grid.pp(), T = grid.tp();
  if (grid.sp() != 1 || uint64_t(P) * uint64_t(T) >= (uint64_t(1) << 16)) return 1;  // add_plan_edges' labels
  const auto& groups = schedule_.groups();
  auto rank_of = [&](int d, int s, int m) { return grid.rank(RankCoord{d, s, m, 0}); };
  // One class program for every rank of a stage (as grid folding).
  for (int s = 0; s < P; ++s) {
    const int b = rank_of(0, s, 0);
    for (int r = 0; r < n; ++r)
      if (grid.coord(r).pp == s &&
          (infos_[r].get() != infos_[b].get() || schedule_.representative_of(r) != schedule_.representative_of(b)))
        return 1;
  }
  // The flows that join replicas: every collective of a stage on a group with members in several
  // replicas, for every lane's group, planned as the replay plans it (one plan per (group, op,
  // root, bytes): the launcher's cache key).
  std::vector<ReplicaEdge> edges;
  std::set<std::tuple<GroupId, int, int, int64_t>> planned;
  uint32_t plan_id = 0;
  for (int s = 0; s < P; ++s) {
    const ProgramInfo* info = infos_[rank_of(0, s, 0)].get();
    const int rep = info->program.rank;
    std::set<std::tuple<GroupId, int, int, int64_t>> ops;
    for (const Task& t : info->program.tasks)
      if (const auto* c = std::get_if<Collective>(&t.op)) ops.emplace(c->group, int(c->op), c->root, c->bytes);
    for (const auto& [g_rep, op, root, bytes] : ops)
      for (int d = 0; d < D; ++d)
        for (int m = 0; m < T; ++m) {
          const int r = rank_of(d, s, m);
          const GroupId g = r != rep ? schedule_.group_for(r, g_rep) : g_rep;
          if (g >= groups.size()) return 1;
          const auto& members = groups[g].ranks;
          bool across = false;
          for (int x : members) across = across || x >= n || grid.coord(x).dp != grid.coord(members.front()).dp;
          if (!across || members.size() <= 1 || bytes <= 0 || !planned.emplace(g, op, root, bytes).second) continue;
          const CollectiveOp cop = CollectiveOp(op);
          const TunedCollective tune = tuner_->choose(cop, members, double(bytes));
          const CollectivePlan plan = plan_collective(cop, members, std::max(0, root), double(bytes), tune.algorithm,
                                                      options_.granularity, *fabric_);
          if (plan_id >= (1u << 16) || plan.phases.size() >= (1u << 16)) return 1;
          add_plan_edges(plan, plan_id++, grid, edges);
        }
  }
  const std::vector<int> cls = equitable_classes(D, edges, options_.replica_class_rounds);
  const int C = D > 0 ? *std::max_element(cls.begin(), cls.end()) + 1 : 0;
  if (C <= 0) return 1;
  // Units (s, c), unit s * C + c; lanes: the class's replicas ascending, then tp.
  std::vector<std::vector<int>> replicas(static_cast<size_t>(C));
  for (int d = 0; d < D; ++d) replicas[size_t(cls[size_t(d)])].push_back(d);
  std::vector<int> unit_of(n), lane_of(n), members, begin;
  int widest = 0;
  for (int s = 0; s < P; ++s)
    for (int c = 0; c < C; ++c) {
      begin.push_back(int(members.size()));
      for (size_t i = 0; i < replicas[size_t(c)].size(); ++i)
        for (int m = 0; m < T; ++m) {
          const int r = rank_of(replicas[size_t(c)][i], s, m);
          unit_of[r] = s * C + c;
          lane_of[r] = int(i) * T + m;
          members.push_back(r);
        }
      widest = std::max(widest, int(members.size()) - begin.back());
    }
  begin.push_back(int(members.size()));
  auto lanes_of = [&](int u) { return begin[size_t(u) + 1] - begin[size_t(u)]; };
  auto member = [&](int u, int l) { return members[size_t(begin[size_t(u)] + l)]; };
  std::vector<std::vector<GroupId>> lanes(groups.size());
  std::map<std::pair<int, GroupId>, GroupId> stage_group;  // (stage, group of the program) -> lane 0's
  for (int u = 0; u < P * C; ++u) {
    const int s = u / C, F = lanes_of(u), b = member(u, 0);
    const ProgramInfo* info = infos_[b].get();
    const int rep = info->program.rank;
    const Usage& use = usage_[info];
    for (const auto& entry : use.group_stream) {
      const GroupId g_rep = entry.first;
      std::vector<GroupId> gl(static_cast<size_t>(F));
      for (int l = 0; l < F; ++l) {
        const int r = member(u, l);
        gl[size_t(l)] = r != rep ? schedule_.group_for(r, g_rep) : g_rep;
        if (gl[size_t(l)] >= groups.size()) return 1;
        const auto& m = groups[gl[size_t(l)]].ranks;
        if (std::find(m.begin(), m.end(), r) == m.end()) return 1;
      }
      const GroupId g0 = gl[0];
      const auto& r0 = groups[g0].ranks;
      bool in_unit = true, in_stage = true;
      for (int r : r0) {
        in_unit = in_unit && r < n && unit_of[r] == u;
        in_stage = in_stage && r < n && grid.coord(r).pp == s;
      }
      std::vector<GroupId> result;
      if (in_stage) {
        // Siblings in lane order of first appearance, each lane 0's group moved by a whole replica
        // (inside the unit) or by tp lanes (a group of tp-0 ranks).
        if (!in_unit) {
          auto [it, fresh] = stage_group.emplace(std::make_pair(s, g_rep), g0);
          if (!fresh && it->second != g0) return 1;
        }
        size_t covered = 0;
        for (int l = 0; l < F; ++l) {
          const GroupId g = gl[size_t(l)];
          if (std::find(result.begin(), result.end(), g) != result.end()) continue;
          const auto& rk = groups[g].ranks;
          if (rk.size() != r0.size() || group_exclusive_[g] != group_exclusive_[g0]) return 1;
          const int shift = rk.front() - r0.front();
          if (g != g0 && shift == 0) return 1;
          bool tp_shift = shift > 0 && shift < T;
          for (size_t i = 0; i < r0.size(); ++i) {
            if (rk[i] != r0[i] + shift || grid.coord(rk[i]).pp != s || (in_unit && unit_of[rk[i]] != u)) return 1;
            tp_shift = tp_shift && grid.coord(r0[i]).tp == 0;
          }
          if (!(in_unit && shift % (P * T) == 0) && !tp_shift && shift != 0) return 1;
          if (!in_unit && shift != 0 && !tp_shift) return 1;
          covered += rk.size();
          result.push_back(g);
        }
        if (in_unit && covered != size_t(F)) return 1;
      } else {
        for (int l = 0; l < F; ++l) {
          const auto& rk = groups[gl[size_t(l)]].ranks;
          if (rk.size() != r0.size() || group_exclusive_[gl[size_t(l)]] != group_exclusive_[g0]) return 1;
          for (size_t i = 0; i < r0.size(); ++i)
            if (r0[i] >= n || lane_of[r0[i]] != 0 || lanes_of(unit_of[r0[i]]) != F ||
                rk[i] != member(unit_of[r0[i]], l))
              return 1;
        }
        result = std::move(gl);
      }
      if (!lanes[g0].empty() && lanes[g0] != result) return 1;
      lanes[g0] = std::move(result);
    }
    for (int p_rep : use.peers) {
      const int p = b != rep ? schedule_.peer_for(b, p_rep) : p_rep;
      if (p < 0 || p >= n || unit_of[p] == u || lane_of[p] != 0 || lanes_of(unit_of[p]) != F) return 1;
      for (int l = 1; l < F; ++l) {
        const int r = member(u, l);
        if ((r != rep ? schedule_.peer_for(r, p_rep) : p_rep) != member(unit_of[p], l)) return 1;
      }
    }
  }
  lane_groups_ = std::move(lanes);
  unit_of_ = std::move(unit_of);
  lane_of_ = std::move(lane_of);
  members_ = std::move(members);
  unit_begin_ = std::move(begin);
  grid_ = true;
  grid_dp_ = D;
  grid_tp_ = T;
  class_count_ = C;
  return widest;
}

void FoldPlanner::count_parties() {
  const auto& groups = schedule_.groups();
  group_parties_.assign(groups.size(), 0);
  std::vector<int> seen;
  for (size_t g = 0; g < groups.size(); ++g) {
    seen.clear();
    for (int m : groups[g].ranks) seen.push_back(unit_of(m));
    std::sort(seen.begin(), seen.end());
    group_parties_[g] = uint32_t(std::unique(seen.begin(), seen.end()) - seen.begin());
  }
}

}  // namespace tandem::sim
