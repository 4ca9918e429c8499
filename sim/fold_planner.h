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
#include <memory>
#include <vector>

#include "shared/schedule.h"
#include "sim/platform_builder.h"
#include "sim/program_info.h"
#include "sim/simulation.h"

namespace tandem::sim {

class FoldPlanner {
 public:
  // `infos`: every rank's program (shared within a class).
  FoldPlanner(const Schedule& schedule, const SimOptions& options, const Platform& platform,
              const std::vector<std::shared_ptr<ProgramInfo>>& infos);

  int fold() const { return fold_; }  // ranks per replayed state (tp lanes, or all replicas); 1: none
  int unit_of(int rank) const { return rank / fold_; }
  // The group's members are on one node and their NVLink ports carry nothing else: closed form.
  bool exclusive(GroupId g) const { return group_exclusive_[g]; }
  // Replayed states that must issue a collective of the group before it moves (1: no matching).
  uint32_t parties(GroupId g) const { return group_parties_[g]; }
  // Folded: a lane-0 group's counterpart in every lane (empty: the unit's own tp group, or no fold).
  const std::vector<GroupId>& lane_groups(GroupId g) const { return lane_groups_[g]; }
  bool folded_lanes(GroupId g) const { return fold_ > 1 && !lane_groups_[g].empty(); }
  // Folded: rank `r` moved `lane` lanes on in its own unit (lane m of a unit talks to lane m of
  // another unit's, or, inside one unit, lane m + d talks to lane m' + d, mod the fold).
  int lane_rank(int r, uint32_t lane) const { return r - r % fold_ + (r % fold_ + int(lane)) % fold_; }
  bool same_unit(int a, int b) const { return a / fold_ == b / fold_; }

 private:
  void scan_exclusive_groups();
  int choose_fold();
  int choose_replica_fold();
  void count_parties();

  // Usage of groups and peers by each distinct program.
  struct Usage {
    std::map<GroupId, int> group_stream;  // -1: several streams
    std::vector<int> peers;               // sorted, unique
  };

  const Schedule& schedule_;
  const SimOptions& options_;
  const Platform& platform_;
  const std::vector<std::shared_ptr<ProgramInfo>>& infos_;
  std::map<const ProgramInfo*, Usage> usage_;
  int fold_ = 1;
  std::vector<uint8_t> group_exclusive_;           // by group id
  std::vector<uint8_t> group_unit_private_;        // by group id: ports carry only the group and its p2p
  std::vector<uint32_t> group_parties_;            // by group id
  std::vector<std::vector<GroupId>> lane_groups_;  // by lane-0 group
};

}  // namespace tandem::sim
