// What `tandem sim` (and each point of `tandem sweep`) will need in memory, estimated before
// anything large is allocated, for shared/resource_limit.h's check_memory_estimate.
#pragma once

#include <cstdint>
#include <string>

#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::sim {

struct MemoryEstimate {
  int64_t bytes = 0;
  std::string how;  // what it counts, for the refusal message
};

// Generates each rank class's program once (one at a time) to count its tasks and allocations;
// Error (bad input) if a count overflows 64 bits. `timeline`: the parent reads the whole trace
// back to write a Chrome JSON timeline.
MemoryEstimate estimate_memory(const Schedule& schedule, const SimOptions& options, bool timeline);

}  // namespace tandem::sim
