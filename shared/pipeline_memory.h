// The planner's memory of pipelined ranks, walked in the order the runtime runs their Alloc and
// Free tasks, not in program order.
//
// Why: a pipeline message ties two ranks' memory together. A stage frees the activation (or
// gradient) it sends when the send completes, and a send completes only once the peer has posted
// the matching receive, which it does when its own compute reaches that point (the receive's
// Alloc waits for the peer's last compute task; shared/step_generator.cc). In 1F1B the last stage
// posts the receive of micro-batch 1's activations only after its backward of micro-batch 0, so
// stage 0 still holds them while it allocates for its own backward: the program-order walk, which
// frees them right after the send, is one buffer short there. Which of two stages gets somewhere
// first is a matter of time, so the walk needs times.
//
// The rule (exec/runtime.cc runs the same): the ranks of one pipeline (same data, tensor and
// sequence coordinates; shared/rank_grid.h) run together on the reference executor
// (shared/reference_executor.h) with roofline task times from the cluster's figures
// (shared/roofline_cost.h), where
//  - Alloc and Free tasks off the pipeline streams run in program order among themselves;
//  - a receive buffer is allocated when its Alloc's deps have finished (the receive is posted);
//  - a send finishes when both it and the peer's matching receive have been reached (rendezvous)
//    plus its transfer time, and the sent buffer is freed after it;
//  - a collective waits only for its group's members in the pipeline (embedding groups tie the
//    first and last stage); the other members (data-parallel replicas, the stage's other tensor-
//    parallel ranks) run the same program and are taken to keep pace.
// Each rank's Allocs and Frees are then walked in order of their times, ties in program order, so
// that without pipeline messages the walk is the program-order one (model states come from it).
#pragma once

#include <functional>
#include <vector>

#include "shared/memory_timeline.h"
#include "shared/schedule.h"

namespace tandem {

// The ranks of `rank`'s pipeline, stage 0 first.
std::vector<int> pipeline_ranks(const Schedule& schedule, int rank);

// The memory profile of every rank of `rank`'s pipeline, stage 0 first (index = pipeline stage).
// Each program is generated once; on_program, when given, sees it (plan_summary takes its other
// figures from it). Throws Error if the programs deadlock or allocate a view.
std::vector<MemoryProfile> pipeline_memory_profiles(const Schedule& schedule, int rank,
                                                    const std::function<void(const Program&)>& on_program = {});

// The planner's figure above takes the roofline times; a real run's pipeline stages keep other
// paces (a stage delayed by the operating system, a slower link), and with them how long a sent
// buffer waits for the peer's receive. The range of `rank`'s device peak over paces:
//  - least: its pipeline peers run arbitrarily early (every receive is posted before it is needed,
//    so a sent buffer is freed right after its send): the walk above with the rank's own task
//    times scaled so far up that one task of its outlasts the peers' whole step;
//  - most: the worst of every execution the runtime may take, any rank or stream stopped for any
//    time (shared/worst_case_peak.h: the peers' receives posted late, the rank's sent buffers freed
//    as late as its streams allow, its receive buffers allocated as early).
// Without pipeline messages both ends are the planner's figure.
struct PeakRange {
  int64_t least_bytes = 0;
  int64_t most_bytes = 0;
};
PeakRange pipeline_peak_range(const Schedule& schedule, int rank);

}  // namespace tandem
