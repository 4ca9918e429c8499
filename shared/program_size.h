// How large a scenario's rank programs will be, estimated BEFORE generating them, so that a
// command refuses a scenario it could not hold in memory (with the estimate and the flag that
// raises the limit, shared/resource_limit.h) instead of failing in the allocator.
//
// The estimate is an upper one, from the counts that drive generation: micro-batches per
// iteration M, layers on a rank L (every chunk of its stage), and per layer and micro-batch the
// tasks of its forward and backward, measured on the generators (build/bin/tandem-plan, the
// "tasks" column, for tiny-gpt at 4 and 8 layers and 4 and 8 micro-batches): 72 plain, 76 with
// tensor parallelism, 92 with dropout, 148 with full recompute and dropout, and about 22*tp more
// with tp_comm_overlap's ring exchanges. Counted here: 100 per layer and micro-batch (+16 for
// ZeRO-2/3's per-micro-batch gathers and reductions, +32*tp for tp_comm_overlap, all x2 for full
// recompute, +20 for selective), 80 per micro-batch for the embedding, head and loss, 40 per
// parameter unit for model state and optimizer, and 1024 more.
#pragma once

#include <cstdint>
#include <string>

#include "shared/resource_limit.h"
#include "shared/scenario.h"

namespace tandem {

// An upper estimate of the tasks of the largest rank program of `scenario` (any stage).
int64_t estimate_program_tasks(const Scenario& scenario);

// Bytes one task of a generated program costs while it is built and held (the Task, its
// dependencies, its share of the buffers and of the builder's bookkeeping): measured 290 on
// tiny-gpt with 4.76 million tasks (peak resident memory / tasks).
inline constexpr int64_t kProgramBytesPerTask = 320;
// Bytes per task of a program replayed by the reference executor (shared/reference_executor.h:
// about 40 a task, plus its memory operations), as the planner does for each pipeline stage.
inline constexpr int64_t kReplayBytesPerTask = 64;

// Bytes per estimated task that `tandem plan` needs: one program built at a time, and with a
// pipeline (pp > 1) every stage's program replayed together: kProgramBytesPerTask + pp x
// kReplayBytesPerTask.
int64_t plan_bytes_per_task(const Scenario& scenario);

// Refuses (Error, bad input, through check_memory_estimate) when estimate_program_tasks x
// `bytes_per_task` is over the limit; `what` names the command ("tandem plan"), the message counts
// tasks and bytes.
void check_program_memory(const Scenario& scenario, int64_t bytes_per_task, const std::string& what,
                          const ResourceLimit& limit);

}  // namespace tandem
