// Checks that a schedule can run: per rank, dependencies point to earlier tasks, every buffer a
// task touches is allocated then (no use after free, no double alloc or free), activations do not
// outlive the iteration; across ranks, every send has its receive (same bytes, in order per pair
// and tag), the members of a group issue the same collectives in the same order on one stream,
// and the whole schedule completes under the reference executor (no cross-rank deadlock).
// Needs every rank's program: for test-sized schedules.
#pragma once

#include <string>
#include <vector>

#include "shared/schedule.h"

namespace tandem {

// Problems found in one rank's program alone.
std::vector<std::string> validate_program(const Program& program);
// Everything above; returns the problems found (empty when valid), at most `limit` of them.
std::vector<std::string> validate_schedule(const Schedule& schedule, size_t limit = 20);

}  // namespace tandem
