// The stand-in backend (leveldb's in-memory Env, for schedules): runs every rank's program in
// dependency order with fixed task costs, no network and no contention. A stream runs its tasks in
// order; a task starts when its stream is free and its dependencies have finished; a collective
// starts when every member has reached it, a send/receive pair when both ends have. Used to test
// the generators (pipeline bubbles, deadlock freedom) without SimGrid or MPI.
#pragma once

#include <functional>
#include <vector>

#include "shared/schedule.h"

namespace tandem {

struct TaskTime {
  double start_s = 0, end_s = 0;
};

struct ReferenceRun {
  std::vector<std::vector<TaskTime>> times;  // [rank][task]
  double makespan_s = 0;
};

using TaskCost = std::function<double(int rank, const Program&, const Task&)>;

// Throws Error describing the blocked tasks when the schedule cannot complete.
ReferenceRun run_reference(const Schedule& schedule, const TaskCost& cost);

}  // namespace tandem
