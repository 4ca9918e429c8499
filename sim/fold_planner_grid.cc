// Grid folding (FoldPlanner::choose_grid_fold): the data-parallel replicas and the tp lanes of one
// pipeline stage replayed as one state, for schedules with dp > 1 and tp or pp > 1 (docs/sim.md
// "Speed shortcuts").
#include <algorithm>

#include "shared/rank_grid.h"
#include "sim/fold_planner.h"

namespace tandem::sim {

// Taken only where every lane of a unit provably sees the same timeline and the one state launches
// exactly the flows of all lanes:
// - closed forms, shared class programs and replica folding on (and tensor-parallel folding when
//   tp > 1); a generated grid with sp = 1, dp > 1 and tp or pp > 1;
// - the platform cannot tell the lanes apart: a tp block inside one node (tp divides
//   gpus_per_node), a replica on whole nodes (gpus_per_node divides pp * tp), NICs shared alike by
//   the tp lanes (as tensor-parallel folding), and no shared fabric link (Platform::private_routes:
//   only the GPUs' own NVLink, PCIe and NIC links can be contended): moving every rank by a whole
//   replica, or lane m of every tp block to lane m', maps the platform onto itself;
// - unit s = the ranks (d, s, m) of stage s, lane d * tp + m, one class program for all;
// - every group the program names is, for lane 0, either inside the unit (its tp group, its
//   data-parallel group): then each lane's own group is a sibling of lane 0's moved by one of the
//   symmetries above, the siblings partition the unit, and the state's collective launches every
//   sibling's plan; or spanning units: then its members are lane 0 of their units and lane l's
//   group is lane l of each member's unit (as tensor-parallel lanes);
// - every p2p peer is lane 0 of another unit, and lane l's peer is lane l of that unit; or a peer
//   inside the unit (tp_comm_overlap's ring exchanges): lane 0's is tp lane e of replica 0, and
//   lane (d, m)'s is (d, m + e mod tp), the image of lane 0's under the move that takes lane 0 to
//   (d, m) (FoldPlanner::lane_image). Lane 0's receive from lane e then stands for lane -e's
//   (tp - e's) receive from lane 0, the image of lane 0's n-th receive from e being lane -e's n-th
//   receive from lane 0, which is what lane 0's n-th send to lane -e meets (NetOpMatcher).
// Then lane l's flows are lane 0's moved by a symmetry of the platform, and max-min sharing gives
// them the same rates (checked as it runs, as tensor-parallel folding is).
int FoldPlanner::choose_grid_fold() {
  if (allowed_.kind != LayoutFold::Kind::kGrid) return 1;  // FoldPlanner::layout_fold
  const int n = schedule_.world_size();
  const RankGrid& grid = schedule_.grid();
  const int D = grid.dp(), P = grid.pp(), T = grid.tp();
  const int F = D * T;
  std::vector<int> unit_of(n), lane_of(n), members(size_t(P) * F);
  for (int r = 0; r < n; ++r) {
    const RankCoord c = grid.coord(r);
    unit_of[r] = c.pp;
    lane_of[r] = c.dp * T + c.tp;
    members[size_t(c.pp) * F + lane_of[r]] = r;
  }
  auto member = [&](int s, int lane) { return members[size_t(s) * F + lane]; };
  const auto& groups = schedule_.groups();
  std::vector<std::vector<GroupId>> lanes(groups.size());
  for (int s = 0; s < P; ++s) {
    const int b = member(s, 0);
    const ProgramInfo* info = infos_[b].get();
    for (int l = 1; l < F; ++l)
      if (infos_[member(s, l)].get() != info || schedule_.representative_of(member(s, l)) != schedule_.representative_of(b))
        return 1;
    const int rep = info->program.rank;
    const Usage& u = usage_[info];
    for (const auto& entry : u.group_stream) {
      const GroupId g_rep = entry.first;
      std::vector<GroupId> gl(F);
      for (int l = 0; l < F; ++l) {
        const int r = member(s, l);
        gl[l] = r != rep ? schedule_.group_for(r, g_rep) : g_rep;
        if (gl[l] >= groups.size()) return 1;
        const auto& m = groups[gl[l]].ranks;
        if (std::find(m.begin(), m.end(), r) == m.end()) return 1;
      }
      const GroupId g0 = gl[0];
      const auto& r0 = groups[g0].ranks;
      bool internal = true;
      for (int r : r0) internal = internal && r < n && unit_of[r] == s;
      std::vector<GroupId> result;
      if (internal) {
        // Siblings in lane order of first appearance; each lane 0's group moved by a symmetry.
        size_t covered = 0;
        for (int l = 0; l < F; ++l) {
          const GroupId g = gl[l];
          if (std::find(result.begin(), result.end(), g) != result.end()) continue;
          const auto& rk = groups[g].ranks;
          if (rk.size() != r0.size() || group_exclusive_[g] != group_exclusive_[g0]) return 1;
          const int c = rk.front() - r0.front();
          bool tp_shift = c > 0 && c < T;
          for (size_t i = 0; i < r0.size(); ++i) {
            if (rk[i] != r0[i] + c || unit_of[rk[i]] != s) return 1;
            tp_shift = tp_shift && grid.coord(r0[i]).tp == 0;
          }
          if (c % (P * T) != 0 && !tp_shift) return 1;
          covered += rk.size();
          result.push_back(g);
        }
        if (covered != size_t(F)) return 1;
      } else {
        for (int l = 0; l < F; ++l) {
          const auto& rk = groups[gl[l]].ranks;
          if (rk.size() != r0.size() || group_exclusive_[gl[l]] != group_exclusive_[g0]) return 1;
          for (size_t i = 0; i < r0.size(); ++i)
            if (r0[i] >= n || lane_of[r0[i]] != 0 || rk[i] != member(unit_of[r0[i]], l)) return 1;
        }
        result = std::move(gl);
      }
      if (!lanes[g0].empty() && lanes[g0] != result) return 1;
      lanes[g0] = std::move(result);
    }
    for (int p_rep : u.peers) {
      const int p = b != rep ? schedule_.peer_for(b, p_rep) : p_rep;
      if (p < 0 || p >= n) return 1;
      if (unit_of[p] == s) {
        // A peer inside the unit (tp_comm_overlap's ring): lane 0's is tp lane e of its own
        // replica, and lane (d, m)'s must be its image under the same move, (d, m + e mod tp).
        std::vector<int> peer_lane(F);
        for (int l = 0; l < F; ++l) {
          const int r = member(s, l);
          const int q = r != rep ? schedule_.peer_for(r, p_rep) : p_rep;
          if (q < 0 || q >= n || unit_of[q] != s) return 1;
          peer_lane[l] = lane_of[q];
        }
        if (in_unit_peer_move(peer_lane, T) == 0) return 1;
        continue;
      }
      if (lane_of[p] != 0) return 1;
      for (int l = 1; l < F; ++l) {
        const int r = member(s, l);
        if ((r != rep ? schedule_.peer_for(r, p_rep) : p_rep) != member(unit_of[p], l)) return 1;
      }
    }
  }
  lane_groups_ = std::move(lanes);
  unit_of_ = std::move(unit_of);
  lane_of_ = std::move(lane_of);
  members_ = std::move(members);
  grid_ = true;
  grid_dp_ = D;
  grid_tp_ = T;
  return F;
}

// Lane quotient (SimOptions::fold_flows; docs/sim.md "Lane quotient"). Under grid folding the one
// state of a unit launches the flows of all its lanes (d, m) = (replica, tp coordinate) at the
// same instant with the same bytes. Let k be the GPUs per NIC and s = k where k divides tp, s = tp
// where tp divides k (a NIC serves whole tp groups), and G the moves of every rank by whole
// replicas (d -> d + a mod dp) and by tp lanes in steps of s (m -> m + b s mod tp, inside its tp
// block). G maps the platform onto itself (a replica is whole nodes, NVLink ports per GPU, NICs
// per k GPUs of one tp block or per whole tp groups, no link shared between nodes:
// Platform::private_routes) and acts freely on the GPUs, the NICs and so on the links: its orbits
// of GPUs are (stage, m mod s), each of |G| = dp tp / s members, represented by the GPU of replica
// 0 and tp coordinate m mod s. If the flows in flight are G-invariant, so are the max-min rates
// (unique): every member of a flow orbit moves at its representative's rate, and each link
// carries exactly one member of each flow orbit that crosses its orbit. The representative of a
// flow is its member leaving a representative GPU; in SimGrid it goes from that GPU to the
// representative of its destination's link orbit (on the same fabric: NVLink or NIC), which may
// be its own GPU or NIC (a star zone routes a host to itself over its up then its down link), so
// every representative link carries exactly the representatives of the orbits crossing it, as
// every link carries one member of each: the rates are the same. Invariance is checked per plan
// (sim/lane_quotient.h: every phase's flows must be whole orbits, else the run is marked inexact
// and simulate() reruns it less folded), so a plan that is not (NCCL's double binary tree over the
// replicas) cannot go unnoticed. Taken when grid folding was, SimOptions::fold_flows, private routes,
// s as above, and no copy crosses a link shared by several GPUs (a PCIe switch uplink, host memory:
// as for the flow quotient below).
int FoldPlanner::choose_lane_quotient() {
  if (!grid_ || allowed_.lane_stride == 0) return 0;  // FoldPlanner::layout_fold
  const int s = allowed_.lane_stride;
  if (shared_host_links(schedule_.scenario().cluster)) {
    std::vector<const ProgramInfo*> scanned;
    for (int u = 0; u < units_; ++u) {
      const ProgramInfo* info = infos_[lane0(u)].get();
      if (std::find(scanned.begin(), scanned.end(), info) != scanned.end()) continue;
      scanned.push_back(info);
      for (const Task& t : info->program.tasks)
        if (std::holds_alternative<Copy>(t.op)) return 0;
    }
  }
  return s;
}

int FoldPlanner::in_unit_peer_move(const std::vector<int>& peer_lane, int tp) {
  if (tp < 2 || peer_lane.empty() || peer_lane.size() % size_t(tp)) return 0;
  const int e = peer_lane[0];
  if (e <= 0 || e >= tp) return 0;
  for (size_t l = 0; l < peer_lane.size(); ++l)
    if (peer_lane[l] != int(l - l % tp + (l % tp + size_t(e)) % tp)) return 0;
  return e;
}

int FoldPlanner::lane_image(int r, uint32_t lane) const {
  if (!grid_) return lane_rank(r, lane);
  const int l = lane_of(r), a = int(lane) / grid_tp_, b = int(lane) % grid_tp_;
  return member(unit_of(r), ((l / grid_tp_ + a) % grid_dp_) * grid_tp_ + (l % grid_tp_ + b) % grid_tp_);
}

uint32_t FoldPlanner::lane_inverse(uint32_t lane) const {
  if (!grid_) return uint32_t((fold_ - int(lane) % fold_) % fold_);
  const int a = int(lane) / grid_tp_, b = int(lane) % grid_tp_;
  return uint32_t(((grid_dp_ - a) % grid_dp_) * grid_tp_ + (grid_tp_ - b) % grid_tp_);
}

int FoldPlanner::move_of(int rank, bool tp_only) const {
  const int l = lane_of(rank), d = tp_only ? 0 : l / grid_tp_, m = l % grid_tp_;
  return d * (grid_tp_ / lane_stride_) + m / lane_stride_;
}

int FoldPlanner::move_back(int rank, int move, bool tp_only) const {
  const int per_replica = grid_tp_ / lane_stride_;
  const int a = tp_only ? 0 : move / per_replica, b = (move % per_replica) * lane_stride_;
  const int l = lane_of(rank), d = l / grid_tp_, m = l % grid_tp_;
  return member(unit_of(rank), ((d - a + grid_dp_) % grid_dp_) * grid_tp_ + (m - b + grid_tp_) % grid_tp_);
}

// Flow quotient (SimOptions::fold_flows; docs/sim.md "Flow quotient"). With grid folding, or
// tensor-parallel folding (units = tp blocks, lane = tp coordinate), the one state launches the
// flows of every lane, and they are the images of lane 0's under the platform's symmetries. Let H
// be the moves of every rank from tp coordinate m to m + j*k (mod tp, inside its tp block), k =
// GPUs per NIC (1 where every GPU has a NIC of its own). H maps the platform onto itself (NVLink
// ports are per GPU, NICs per k GPUs, no link shared between nodes: Platform::private_routes)
// and acts freely on the links the flows use: no such link is its own image. If every flow joins
// two GPUs of the same tp coordinate, each H-orbit of flows has exactly one member whose ends have
// tp coordinate < k, and every link of an orbit carries exactly one member of each flow orbit
// crossing it. The set of flows in flight is H-invariant (every lane launches at the same
// instant, bytes equal), so the max-min rates (unique) are H-invariant, and on the links of the
// ranks with tp < k they are those of the system of the representatives alone: each such link
// carries the same flows, one per orbit, in both systems. So only the representatives go to
// SimGrid; every other flow ends when its representative does (FlowLauncher). Taken when:
// - grid folding or tensor-parallel folding was taken, tp > 1, k divides tp and k < tp;
// - every group a unit's state runs collectives on that launch flows (not closed-form) has
//   members of one tp coordinate (the data-parallel group, groups spanning stages); a tp group
//   that is not closed-form (its flows join different tp coordinates) refuses the quotient;
// - every p2p peer has the state's tp coordinate (grid folding: lane l to lane l of another
//   unit; tensor-parallel folding: lane m to lane m of another unit, not the ring exchanges of
//   tp_comm_overlap between a unit's lanes);
// - no copy crosses a link shared by GPUs of different tp coordinates: a PCIe switch's uplink
//   (cluster.gpus_per_pcie_switch > 1) or the node's host memory is its own image under H, and
//   would carry the copies of the representatives only; where the schedule copies and the cluster
//   has either, the quotient is refused.
// FlowLauncher checks the flows it launches (a flow between tp coordinates of different classes
// marks the run inexact, and simulate() reruns it unfolded).
int FoldPlanner::choose_flow_quotient() {
  // FoldPlanner::layout_fold: tp > 1, k divides tp, k < tp, private routes, for the fold taken.
  if (allowed_.flow_stride == 0 || fold_ <= 1 || (!grid_ && fold_ != allowed_.tensor_fold)) return 0;
  const RankGrid& grid = schedule_.grid();
  const int k = allowed_.flow_stride;
  const bool shared_host = shared_host_links(schedule_.scenario().cluster);
  const auto& groups = schedule_.groups();
  std::vector<const ProgramInfo*> scanned;
  for (int u = 0; u < units_; ++u) {
    const int b = lane0(u);
    const ProgramInfo* info = infos_[b].get();
    const bool translate = info->program.rank != b;
    const Usage& use = usage_.at(info);
    for (const auto& entry : use.group_stream) {
      const GroupId g = translate ? schedule_.group_for(b, entry.first) : entry.first;
      if (g >= groups.size()) return 0;
      if (group_exclusive_[g]) continue;
      for (int r : groups[g].ranks)
        if (grid.coord(r).tp != grid.coord(b).tp) return 0;
    }
    for (int p_rep : use.peers) {
      const int p = translate ? schedule_.peer_for(b, p_rep) : p_rep;
      if (p < 0 || p >= schedule_.world_size() || grid.coord(p).tp != grid.coord(b).tp) return 0;
    }
    if (shared_host && std::find(scanned.begin(), scanned.end(), info) == scanned.end()) {
      scanned.push_back(info);
      for (const Task& t : info->program.tasks)
        if (std::holds_alternative<Copy>(t.op)) return 0;
    }
  }
  tp_of_.resize(size_t(schedule_.world_size()));
  for (int r = 0; r < schedule_.world_size(); ++r) tp_of_[size_t(r)] = grid.coord(r).tp;
  return k;
}

}  // namespace tandem::sim
