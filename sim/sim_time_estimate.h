// How long `tandem sim` (and each point of `tandem sweep`) will take on this machine, estimated
// before the simulation starts from what it will replay (sim/sim_memory_estimate.h's SimWork), so
// that a run of hours is refused at once with the estimate and the flag that raises the limit
// (--max-time DURATION), instead of running on.
//
//   const TimeEstimate t = estimate_time(count_sim_work(schedule, options), options);
//   check_time_estimate(t, "tandem sim", limit);   // Error (bad input) over limit.max_time_s
#pragma once

#include <string>

#include "shared/resource_limit.h"
#include "sim/sim_memory_estimate.h"
#include "sim/simulation.h"

namespace tandem::sim {

struct TimeEstimate {
  double seconds = 0;
  std::string how;  // what it counts, for the message
};

// Wall time of one simulation on one core of this machine, quiet (constants and their
// measurements in sim_time_estimate.cc and docs/sim.md). Without shortcuts (--no-shortcuts) or
// with one flow per ring step (--granularity step) the replay does more per task; the estimate
// then scales the per-task term by the factors measured for those modes.
TimeEstimate estimate_time(const SimWork& work, const SimOptions& options);

// Throws Error (bad input) when limit.max_time_s > 0 and the estimate is over it:
//   "<what> would take about 2.3 h of wall time (<how>), more than the limit of 1 h; raise it with
//    --max-time DURATION (e.g. --max-time 3h; 0 for no limit) or make the run smaller".
void check_time_estimate(const TimeEstimate& estimate, const std::string& what, const ResourceLimit& limit);

// "8 s", "95 s", "12.5 min", "2.3 h".
std::string format_duration(double seconds);

// A duration as a user writes it: a non-negative number with an optional unit, s, m (or min) or
// h: "90", "90s", "30m", "2h", "1.5h". Error (bad input, naming `flag`) for anything else.
double parse_duration(const std::string& text, const std::string& flag);

}  // namespace tandem::sim
