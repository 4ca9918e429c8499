// A lower bound on a point's planned peak memory without generating its program: the model states
// (parameters, gradients, optimizer states) the step generator allocates first on the device, in
// closed form from the same parameter layout (shared/param_layout.h, make_param_layout) and the same
// byte counts as shared/grad_sync.cc's emit_persistent_state under the point's ZeRO stage, tensor
// and pipeline split, dtypes and optimizer offload.
//
// Why it is a lower bound: emit_persistent_state is the first thing StepGenerator::generate emits
// (shared/step_generator.cc), so these buffers are the program's leading Allocs and are live
// together right after them; a rank's peak (the planner's walk, memory_profile, or the pipeline
// walk for pp > 1, which counts the same Allocs) is at least that sum, and the plan's peak is the
// largest over the ranks, so at least any one rank's sum. The bound takes the largest over the
// pipeline stages of tensor rank 0. Tested against the planner on every valid point of a tiny and
// a mid-size space (tests/search/memory_bound_test.cc): equal to the planner's model states of
// that rank, never above its peak.
#pragma once

#include <cstdint>

#include "shared/scenario.h"

namespace tandem::search {

// The device bytes of the model states of the rank at pipeline stage `stage`, tensor rank 0.
int64_t model_state_bytes(const Scenario& point, int stage);

// The largest of model_state_bytes over the point's pipeline stages: <= the planner's peak.
int64_t peak_memory_lower_bound(const Scenario& point);

}  // namespace tandem::search
