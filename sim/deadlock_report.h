// The message of a replay that stops with tasks left: for the first few stuck ranks, what each
// stream is at (a collective waiting for the rest of its group, an unmatched send or receive, a
// task waiting for its deps).
//
// Why separate: it is the one place that reads the whole replay state to explain it, and it runs
// once, at the end of a failed replay.
#pragma once

#include <string>
#include <vector>

#include "sim/rank_state.h"

namespace tandem::sim {

// "schedule deadlocks: no task can run any more at t=... s;" and up to 8 ranks' streams.
std::string deadlock_report(double now, const std::vector<RankState>& states);

}  // namespace tandem::sim
