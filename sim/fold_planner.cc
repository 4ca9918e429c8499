#include "sim/fold_planner.h"

#include <algorithm>

#include "shared/rank_grid.h"

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
                         const std::vector<std::shared_ptr<ProgramInfo>>& infos)
    : schedule_(schedule),
      options_(options),
      platform_(platform),
      shape_(FoldShape::of(platform)),
      allowed_(layout_fold(schedule, options, shape_)),
      infos_(infos) {
  scan_exclusive_groups();
  fold_ = choose_grid_fold();
  if (fold_ == 1) fold_ = choose_fold();
  units_ = schedule_.world_size() / fold_;
  if (lane_groups_.empty()) lane_groups_.resize(schedule_.groups().size());
  count_parties();
  lane_stride_ = choose_lane_quotient();
  quotient_stride_ = choose_flow_quotient();
}

std::vector<std::pair<int, int>> FoldPlanner::unit_nodes(int unit) const {
  std::vector<std::pair<int, int>> out;
  for (int lane = 0; lane < fold_; ++lane) {
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
