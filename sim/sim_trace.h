// The predicted trace of a simulation, written in the simulation's own process as the replay's
// recordings are turned into rank records (traces/trace_writer.h): the whole trace is never in
// memory, and neither is a rank's timings more than once per folded unit.
#pragma once

#include <string>

#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::sim {

// `r` as the replay leaves it: tasks sorted by (rank, task id), memory samples by rank (time order
// kept), one entry per replayed unit, under the rank of its lane 0; `fold` consecutive ranks share
// a unit's timings (r.fold). Every rank of the world gets a record (backend "sim"), the tasks'
// kinds, sizes and labels from its class program (Schedule::rank_classes).
void write_sim_trace(const Schedule& schedule, const SimResult& r, const std::string& path);

}  // namespace tandem::sim
