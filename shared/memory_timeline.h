// Memory of one rank over its program, derived from the Alloc/Free tasks in program order (the
// planner's view; the simulator and the real run account the same tasks in time). Views allocate
// nothing. Device and host placements are counted apart.
//
// memory_profile(schedule, rank) is the planner's per-rank figure, the one `tandem plan` reports
// and `tandem run` measures against: the program-order walk when the strategy has no pipeline
// (pp = 1), else the pipeline-aware walk of shared/pipeline_memory.h, where a sent buffer lives
// until the peer has posted its receive.
#pragma once

#include <array>
#include <functional>

#include "shared/schedule.h"

namespace tandem {

struct MemoryBreakdown {
  std::array<int64_t, kBufferRoleCount> bytes{};
  int64_t total() const;
  int64_t operator[](BufferRole r) const { return bytes[static_cast<int>(r)]; }
};

struct MemoryProfile {
  int64_t peak_device_bytes = 0;
  TaskId peak_task = kNoId;           // the Alloc that reached the peak
  MemoryBreakdown at_peak;            // device bytes by role at the peak
  int64_t peak_host_bytes = 0;
  // Parameters, gradients and optimizer states on the device allocated by the program's prologue
  // (its leading Alloc tasks on the compute stream, where the generators place persistent state
  // and the iteration's gradients): what ZeRO's accounting calls model states.
  MemoryBreakdown model_states;
};

// Calls visit(task, device bytes by role, host bytes) after each task of the program.
void walk_memory(const Program& program,
                 const std::function<void(const Task&, const MemoryBreakdown&, int64_t host_bytes)>& visit);

// The program-order walk.
MemoryProfile memory_profile(const Program& program);

// The planner's profile of one rank of a schedule (see above).
MemoryProfile memory_profile(const Schedule& schedule, int rank);

}  // namespace tandem
