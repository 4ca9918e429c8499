// The stand-in backend (leveldb's in-memory Env, for schedules): runs every rank's program in
// dependency order with fixed task costs, no network and no contention. A stream runs its tasks in
// order; a task starts when its stream is free and its dependencies have finished; a collective
// starts when every member has reached it, a send/receive pair when both ends have (so a send
// finishes no earlier than the peer posts its receive: a rendezvous, as MPI and NCCL run large
// messages). Used to test the generators (pipeline bubbles, deadlock freedom) without SimGrid or
// MPI, and by the planner's pipeline-aware memory walk (shared/pipeline_memory.h).
//
// A run keeps per task only what timing needs (stream, deps, kind, cost), not the programs, so
// that a 16-stage pipeline of GPT-3 175B (16 x 180k tasks) runs in about a hundred MB.
#pragma once

#include <functional>
#include <vector>

#include "shared/schedule.h"

namespace tandem {

struct TaskTime {
  double start_s = 0, end_s = 0;
};

struct ReferenceRun {
  std::vector<std::vector<TaskTime>> times;  // [rank][task]; empty for ranks not run
  double makespan_s = 0;
};

using TaskCost = std::function<double(int rank, const Program&, const Task&)>;

struct ReferenceOptions {
  // The ranks to run (empty: every rank). A collective then waits only for the members of its
  // group among them: the others are taken to progress as the members that run do (data-parallel
  // replicas and the tensor-parallel ranks of a stage run the same program on other data), and
  // a message to or from a rank not run (a tensor ring's neighbour) is met on time.
  std::vector<int> ranks;
  // Alloc and Free tasks off the pipeline streams run in program order among themselves, as the
  // real runtime runs them (exec/runtime.cc, shared/schedule.h is_pipeline).
  bool memory_in_program_order = false;
  // Sees each program once, when it is generated, before the run drops it.
  std::function<void(const Program&)> on_program;
  // A message to or from a rank not run is not met on time but matched with the run rank's own
  // opposite message translated within the first group of both with more than one rank: the k-th
  // send (tag t) to the rank d places ahead in that group with this rank's k-th receive (tag t)
  // from the rank d places behind, the pair starting when both are posted. What the run rank gets
  // when every rank runs the same program translated within each group (a layer probe's tp x sp
  // ranks, search/layer_probe.h) without generating the others. The run must then hold one rank.
  bool translated_peers = false;
};

// Throws Error describing the blocked tasks when the schedule cannot complete.
ReferenceRun run_reference(const Schedule& schedule, const TaskCost& cost, const ReferenceOptions& options = {});

// The same run over programs the caller already has: the ranks run are the programs' own
// (Program::rank; options.ranks must be empty), `groups` are the schedule's (Schedule::groups(),
// a group's id its index) and `world` its size. on_program sees each given program.
ReferenceRun run_reference(int world, const std::vector<ProcessGroup>& groups, const std::vector<Program>& programs,
                           const TaskCost& cost, const ReferenceOptions& options = {});

}  // namespace tandem
