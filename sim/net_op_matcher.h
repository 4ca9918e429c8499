// Matches the posts of a network op across replayed states (shared/schedule.h semantics): the
// n-th collective of a group on each member meet in one op, which is ready once every state of
// the group has posted it; the n-th send a->b meets the n-th receive at b from a (rendezvous);
// a copy is ready at once. It owns the pending collectives and the per-pair queues of posts.
//
// The checks made here (the group exists, the peer is a valid other rank, matched posts agree on
// op, bytes, root or tag) are the replay's on-the-fly form of what shared/schedule_validator
// checks offline; the validator needs every rank's program and a reference run, so it is not on
// the simulation path. A mismatch is bad input (Error naming both ranks).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

#include "shared/schedule.h"
#include "sim/fold_planner.h"
#include "sim/net_op.h"
#include "sim/rank_state.h"

namespace tandem::sim {

class NetOpMatcher {
 public:
  static constexpr uint32_t kWaiting = UINT32_MAX;  // posted; the op still waits for other parties

  NetOpMatcher(const Schedule& schedule, const FoldPlanner& layout, NetOpPool& ops);

  // Post task `id` of state `r` at time `now`; returns the op when it is ready to launch.
  uint32_t post_collective(RankState& r, TaskId id, const Collective& c, double now);
  uint32_t post_p2p(RankState& r, TaskId id, const SendRecv& s, double now);
  uint32_t post_copy(RankState& r, TaskId id, const Copy& c, double now);
  // A host Adam (ProgramInfo::host_flows): its memory traffic as a flow, ending no earlier than
  // `compute_s` after `now`; `component` is the task's cost component.
  uint32_t post_host_memory(RankState& r, TaskId id, int64_t bytes, double compute_s, uint8_t component, double now);

 private:
  struct PairQueue {
    std::deque<uint32_t> sends, recvs;  // ops posted by one side, waiting for the other
  };
  int rank_of_unit(int32_t unit) const { return layout_.lane0(unit); }

  const Schedule& schedule_;
  const FoldPlanner& layout_;
  NetOpPool& ops_;
  std::unordered_map<uint64_t, uint32_t> pending_collectives_;      // (group, seq) -> op
  std::unordered_map<uint64_t, std::unique_ptr<PairQueue>> pairs_;  // (src, dst) -> pending posts
};

}  // namespace tandem::sim
