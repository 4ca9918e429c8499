// The task times of a layer probe's programs (search/layer_probe.h) under the simulator's ordering
// rules without SimGrid, run by shared/reference_executor.h (its rules, stated once there): a task
// starts when the previous task of its stream and every task in its deps have ended
// (shared/schedule.h), a collective when every member of its group has posted it (the n-th
// collective of a group on each member, as sim/net_op_matcher.cc matches them), a send and its
// receive when both are posted (the n-th send of a rank pair and tag with the n-th receive,
// rendezvous), each then taking the time its cost function gives it. This header only adapts the
// costs (ReplayCosts) and the result (TaskTimes). No traffic meets other traffic (the probe's
// collectives are priced uncontended: search/comm_cost.h), so the times are exact for the given
// costs; what they add to summing the costs is the overlap the program's streams and dependencies
// allow: Megatron's dgrad reduce-scatter / all-reduce under the wgrad GEMM, Transformer Engine's
// userbuffers ring exchange under its chunk GEMMs, ring attention's key/value exchange under its
// attention blocks.
#pragma once

#include <functional>
#include <vector>

#include "shared/schedule.h"

namespace tandem::search {

struct ReplayCosts {
  // Seconds of a task that runs alone on its stream: kernels, copies (0 for Alloc and Free).
  std::function<double(const Task&)> own;
  // Seconds of a collective among `members` (global ranks), of a send/receive between two ranks.
  std::function<double(const Collective&, const std::vector<int>& members)> collective;
  std::function<double(int src, int dst, const SendRecv&)> p2p;
};

struct TaskTimes {
  std::vector<double> start_s, end_s;  // by task id
};

// The times of every task of `programs` (programs[r] is rank r's; ranks 0..programs.size()-1 are
// the whole world; a collective's group is groups[its group id], Schedule::groups()). Throws Error
// (internal) when the programs cannot finish (a collective or message never matched).
std::vector<TaskTimes> replay_programs(const std::vector<ProcessGroup>& groups, const std::vector<Program>& programs,
                                       const ReplayCosts& costs);

// The times of `program`'s tasks when every other rank runs the same program translated within
// each of its groups (a layer probe's ranks: tp x sp, no data or pipeline parallelism; ring
// attention's even and odd ranks post their send and receive in either order, at the same times):
// a collective then starts when this rank posts it, and the k-th send to the rank d places ahead
// in a group is received by it at the moment this rank's k-th receive from the rank d places behind
// is posted, so the pair starts at the later of the two posts. What replay_programs gives rank
// `program.rank` for translated programs, without generating and replaying the other ranks'.
TaskTimes replay_symmetric(const std::vector<ProcessGroup>& groups, const Program& program, const ReplayCosts& costs);

}  // namespace tandem::search
