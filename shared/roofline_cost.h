// A task's time from the cluster's datasheet figures alone: the timing proxy of the planner's
// pipeline-aware memory walk (shared/pipeline_memory.h), which needs to know which of two stages
// gets somewhere first, not how long an iteration takes (that is the simulator's job, sim/).
//  - compute: max(matrix flops / peak flops of its dtype, bytes moved / HBM bandwidth) plus the
//    kernel launch time (Compute::matmul_flops, Compute::bytes_moved);
//  - a collective or a message: latency + bytes / bandwidth of the slowest link it crosses
//    (NVLink inside a node, the NIC between nodes);
//  - a copy: PCIe latency + bytes / PCIe bandwidth;
//  - Alloc and Free: nothing.
#pragma once

#include "shared/reference_executor.h"
#include "shared/schedule.h"

namespace tandem {

// Throws Error if a figure it divides by is not positive (a loaded scenario always has them).
TaskCost roofline_cost(const Schedule& schedule);

}  // namespace tandem
