// Decides, before the replay starts, which shortcuts the schedule allows on this platform:
// which groups' collectives may take their closed-form time (exclusive groups), and whether the
// tp ranks of each (dp, pp) coordinate can be replayed as one state (tensor-parallel folding,
// docs/sim.md "Speed shortcuts"), or, in a pure data-parallel schedule, all replicas (replica
// folding: the unit is the whole world, its one group internal). It owns the layout every later part reads: the fold, the groups'
// exclusivity, how many replayed states must issue each group's collectives, and each folded
// group's counterpart in every tp lane.
//
// Why separate: these are whole-schedule proofs over every class program and the platform, done
// once; the event loop only looks their answers up.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <memory>
#include <vector>

#include "shared/schedule.h"
#include "sim/collective_algorithms.h"
#include "sim/platform_builder.h"
#include "sim/program_info.h"
#include "sim/simulation.h"

namespace tandem::sim {

class NcclTuner;

// The platform as the fold conditions read it: a built Platform's, or, for the estimates made
// before any platform is built (sim/sim_memory_estimate.cc), the cluster's by the same rule
// (Platform::has_leaves).
struct FoldShape {
  int gpus_per_node = 1;
  int nics_per_node = 1;
  bool private_routes = true;  // Platform::private_routes
  int gpus_per_nic() const { return nics_per_node >= gpus_per_node ? 1 : gpus_per_node / nics_per_node; }
  static FoldShape of(const Platform& platform);
  static FoldShape of(const ClusterSpec& cluster, int world_size, const FabricShape& fabric);
};

// The fold the options, the grid and the platform allow, before FoldPlanner checks the programs:
// the fold the planner tries first, and the strides of the quotients it would then take. The
// planner's choose_* start from it; the memory and time estimates take it as the fold (their
// per-program checks assumed to pass).
struct LayoutFold {
  enum class Kind { kNone, kTensor, kReplica, kGrid };
  Kind kind = Kind::kNone;
  int fold = 1;         // ranks per replayed state
  int lane_stride = 0;  // FoldPlanner::lane_stride() where the programs allow it (0: not taken)
  int flow_stride = 0;  // FoldPlanner::quotient_stride() where the programs allow it (0: not taken)
  int tensor_fold = 1;  // tp where tensor-parallel folding is allowed (the planner's fallback where
                        // the programs refuse grid folding), else 1
};

class FoldPlanner {
 public:
  // What the layout allows (see LayoutFold): the one statement of the layout-level conditions of
  // every fold and quotient below.
  static LayoutFold layout_fold(const Schedule& schedule, const SimOptions& options, const FoldShape& shape);
  // Copies (offload) cross a link several GPUs share (a PCIe switch's uplink, the node's host
  // memory): where a schedule copies, both quotients are refused.
  static bool shared_host_links(const ClusterSpec& cluster) {
    return cluster.gpus_per_pcie_switch > 1 || cluster.host_memory_bandwidth_gbps > 0;
  }

  // `infos`: every rank's program (shared within a class). `tuner` and `fabric` (both or neither)
  // let the replica-class fold (SimOptions::fold_replica_classes) plan the collectives that join
  // replicas as the replay will.
  FoldPlanner(const Schedule& schedule, const SimOptions& options, const Platform& platform,
              const std::vector<std::shared_ptr<ProgramInfo>>& infos, NcclTuner* tuner = nullptr,
              const FabricModel* fabric = nullptr);

  // Ranks per replayed state (tp lanes, or all replicas); 1: none. With the replica-class fold,
  // units differ in size (lanes()): the largest.
  int fold() const { return fold_; }
  int units() const { return units_; }
  // Lanes of one unit (ranks its state stands for): fold() but under the replica-class fold.
  int lanes(int unit) const { return grid_ ? unit_begin_[size_t(unit) + 1] - unit_begin_[size_t(unit)] : fold_; }
  // The replica-class fold (choose_class_fold) was taken: units are (stage, class of replicas).
  bool replica_classes() const { return class_count_ > 0; }
  int replica_class_count() const { return class_count_; }
  // A unit's lanes are ranks; lane 0 is the rank the state replays. Consecutive ranks (tp lanes,
  // pure data parallelism: unit u = ranks u*fold ..), or, with grid folding, every replica's tp
  // lanes of one pipeline stage (lane d*tp + m = rank (d, stage, m)).
  int unit_of(int rank) const { return grid_ ? unit_of_[rank] : rank / fold_; }
  int lane_of(int rank) const { return grid_ ? lane_of_[rank] : rank % fold_; }
  int lane0(int unit) const { return member(unit, 0); }
  int member(int unit, int lane) const { return grid_ ? members_[size_t(unit_begin_[size_t(unit)] + lane)] : unit * fold_ + lane; }
  // Lanes that are not consecutive ranks (grid folding): SimResult::lane0 and the trace use it.
  bool scattered() const { return grid_; }
  // The group's members are on one node and their NVLink ports carry nothing else: closed form.
  bool exclusive(GroupId g) const { return group_exclusive_[g]; }
  // Replayed states that must issue a collective of the group before it moves (1: no matching).
  uint32_t parties(GroupId g) const { return group_parties_[g]; }
  // Folded: a lane-0 group's counterpart in every lane (empty: the unit's own tp group, or no fold).
  // Grid folding: a group inside the unit lists its sibling groups (every replica's tp group, every
  // tp lane's data-parallel group), which the one state's collective stands for.
  const std::vector<GroupId>& lane_groups(GroupId g) const { return lane_groups_[g]; }
  // Lanes an op of the group moves (1: the group itself; grid folding: its siblings; else fold).
  uint32_t op_lanes(GroupId g) const {
    return fold_ > 1 && !lane_groups_[g].empty() ? uint32_t(lane_groups_[g].size()) : 1;
  }
  bool folded_lanes(GroupId g) const { return fold_ > 1 && !lane_groups_[g].empty(); }
  // Folded: rank `r` moved `lane` lanes on in its own unit (lane m of a unit talks to lane m of
  // another unit's, or, inside one unit, lane m + d talks to lane m' + d, mod the fold).
  int lane_rank(int r, uint32_t lane) const {
    const int u = unit_of(r);
    return member(u, (lane_of(r) + int(lane)) % lanes(u));
  }
  bool same_unit(int a, int b) const { return unit_of(a) == unit_of(b); }
  // `r` moved by the symmetry that takes its unit's lane 0 to lane `lane`: with grid folding the
  // move of a = lane / tp replicas and b = lane % tp tp lanes, each modulo its own size (so a peer
  // inside the unit stays in its tp block: tp_comm_overlap's ring, fold_planner_grid.cc); else
  // lane_rank. Equal to lane_rank wherever r is a lane 0. (Added by hsearch, session 12.)
  int lane_image(int r, uint32_t lane) const;
  // The lane of the inverse move: lane_image(lane_image(r, l), lane_inverse(l)) == r.
  uint32_t lane_inverse(uint32_t lane) const;
  // Grid folding's test of a peer inside the unit (fold_planner_grid.cc): `peer_lane[l]` is the
  // lane (d * tp + m) of lane l's peer; the tp move e (0 < e < tp) when lane 0's peer is lane e
  // and every lane (d, m)'s is (d, m + e mod tp), else 0 (not a move: refused). (Added by hsearch.)
  static int in_unit_peer_move(const std::vector<int>& peer_lane, int tp);
  // Flow quotient (grid folding with tp > 1, SimOptions::fold_flows; fold_planner_grid.cc): only
  // the flows of ranks whose tp coordinate is below quotient_stride() go to SimGrid; every other
  // flow is the image of one of them under a tp-lane move of the platform and ends with it.
  // 0: no quotient (every flow is simulated).
  int quotient_stride() const { return quotient_stride_; }
  bool simulated(int rank) const {
    if (lane_stride_) return lane_of(rank) < lane_stride_;
    return quotient_stride_ == 0 || tp_of_[rank] < quotient_stride_;
  }
  // Lane quotient (grid folding, SimOptions::fold_flows; fold_planner_grid.cc, sim/lane_quotient.h):
  // the group G of whole-replica moves and tp moves by multiples of lane_stride() (the GPUs per
  // NIC, or tp where a NIC serves whole tp groups) acts freely on each unit's lanes and maps the
  // platform onto itself; of every G-orbit of flows only the member leaving a lane below
  // lane_stride() goes to SimGrid. 0: not taken (the tp-only quotient above may be).
  int lane_stride() const { return lane_stride_; }
  // `tp_only`: the subgroup H of G of the tp moves alone (replicas fixed), for ops whose flows are
  // whole orbits of H but not of G (NCCL's double binary tree over the replicas).
  int lane_moves(bool tp_only = false) const { return (tp_only ? grid_tp_ : fold_) / lane_stride_; }  // |G| or |H|
  // The element of G (0 .. lane_moves()-1) that moves the orbit representative of `rank` onto it.
  int move_of(int rank, bool tp_only = false) const;
  // `rank` moved by the inverse of element `move`.
  int move_back(int rank, int move, bool tp_only = false) const;
  // The representative of `rank`'s orbit: its unit's lane of replica 0 (of its own replica under
  // H) and tp coordinate mod the stride.
  int orbit_rep(int rank, bool tp_only = false) const {
    const int l = lane_of(rank);
    return member(unit_of(rank), (tp_only ? l - l % grid_tp_ : 0) + l % grid_tp_ % lane_stride_);
  }
  // Nodes a unit's lanes lie on, ascending, with the number of its lanes on each (host memory).
  std::vector<std::pair<int, int>> unit_nodes(int unit) const;

 private:
  void scan_exclusive_groups();
  int choose_fold();
  int choose_replica_fold();
  int choose_grid_fold();  // fold_planner_grid.cc
  int choose_class_fold();
  int choose_flow_quotient();  // fold_planner_grid.cc
  int choose_lane_quotient();  // fold_planner_grid.cc
  void count_parties();

  // Usage of groups and peers by each distinct program.
  struct Usage {
    std::map<GroupId, int> group_stream;  // -1: several streams
    std::vector<int> peers;               // sorted, unique
  };

  const Schedule& schedule_;
  const SimOptions& options_;
  const Platform& platform_;
  const FoldShape shape_;
  const LayoutFold allowed_;  // layout_fold's answer
  const std::vector<std::shared_ptr<ProgramInfo>>& infos_;
  std::map<const ProgramInfo*, Usage> usage_;
  int fold_ = 1;
  int units_ = 1;
  bool grid_ = false;                              // grid folding: the three tables below
  int quotient_stride_ = 0;                        // choose_flow_quotient
  int lane_stride_ = 0;                            // choose_lane_quotient
  int grid_dp_ = 1, grid_tp_ = 1;                  // grid folding: lane = d * grid_tp_ + m
  std::vector<int> tp_of_;                         // by rank, with the quotient: tp coordinate
  std::vector<int> unit_of_, lane_of_, members_;  // by rank, by rank, by unit_begin_[unit] + lane
  std::vector<int> unit_begin_;                    // grid folding: by unit, its lanes' start in members_; then the end
  NcclTuner* tuner_ = nullptr;                     // the replica-class fold's plans
  const FabricModel* fabric_ = nullptr;
  int class_count_ = 0;                            // choose_class_fold: classes of replicas (0: not taken)
  std::vector<uint8_t> group_exclusive_;           // by group id
  std::vector<uint8_t> group_unit_private_;        // by group id: ports carry only the group and its p2p
  std::vector<uint32_t> group_parties_;            // by group id
  std::vector<std::vector<GroupId>> lane_groups_;  // by lane-0 group
};

}  // namespace tandem::sim
