// Whether a rank's planned memory (the program-order walk, shared/memory_timeline.h) bounds its
// memory in every execution, not only in the runtime's, which runs Alloc and Free tasks in program
// order (exec/runtime.cc).
//
// An execution runs each stream in order and a task after its dependencies; the simulator runs
// Allocs and Frees as they come up in time. The walk is an upper bound of every such execution's
// live bytes (device and host apart) if every Free that comes before an Alloc of the same
// placement in program order happens before it (through stream order and dependencies): at any
// instant the tasks run form a dependency-closed set; take its Alloc last in program order: every
// Free before it has run, so the live bytes are at most the walk's at that Alloc. The runtime's
// order attains the walk, so the plan is then exactly the worst case. A Free that may run after a
// later Alloc (a buffer freed behind a copy still in flight while the next one is allocated) is
// where the walk under-counts.
//
// Pipeline streams are left out (their memory is walked with the peers', shared/pipeline_memory.h).
#pragma once

#include <optional>

#include "shared/schedule.h"

namespace tandem {

struct UnorderedFree {
  TaskId free = kNoId;   // a Free ...
  TaskId alloc = kNoId;  // ... before this Alloc in program order that need not run before it
};

// The first such pair of buffers in `placement` in program order (by Alloc), or nothing when the
// walk of that placement bounds every execution.
std::optional<UnorderedFree> first_unordered_free(const Program& program, Placement placement);

}  // namespace tandem
