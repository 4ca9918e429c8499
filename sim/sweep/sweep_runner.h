// Runs the points of a sweep, in parallel over worker processes: up to `jobs` points at a time,
// each in its own forked process (load the scenario with the point's overrides, build the
// Schedule, simulate), the result sent back through a pipe. Processes rather than threads because
// simulate() forks (SimGrid's clock cannot be reset in-process) and forking a multi-threaded
// process is unsafe; the parent stays single-threaded. Results are stored by point index, so the
// table does not depend on `jobs` or on which point finishes first.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shared/resource_limit.h"
#include "sim/simulation.h"
#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_table.h"

namespace tandem::sweep {

// Checks the flags against the scenario before anything runs: the file is readable and parses,
// every --set and every --vary value is accepted by the loader's field check (a known field, a
// value of the field's type), no key is both set and varied. Throws Error naming the flag
// ("--vary strategy.tpp=1,2: unknown field ..."). Rules that depend on the whole point (tp must
// divide the GPUs...) are not checked here: such points are kept, invalid, with the reason.
void check_flags(const std::string& scenario_path, const std::vector<std::string>& sets, const SweepGrid& grid);

// One point, in this process (simulate() itself forks). Never throws: failures are the result. A
// point whose memory estimate (sim/sim_memory_estimate.h) is over `limit` is not simulated: it is
// invalid, the reason naming the estimate and the flag that raises the limit; so is a point whose
// wall-time estimate (sim/sim_time_estimate.h) is over limit.max_time_s (--max-time).
PointResult evaluate_point(const std::string& scenario_path, const std::vector<std::string>& overrides,
                           const sim::SimOptions& options, const ResourceLimit& limit = {});

struct RunOptions {
  int jobs = 0;  // worker processes; 0: std::thread::hardware_concurrency()
  // The whole sweep's memory budget (--max-memory), shared by the points running at once: each
  // point gets limit / jobs. Its max_time_s (--max-time) bounds each point's own wall time.
  ResourceLimit limit;
  sim::SimOptions sim;
  // Called after each point completes and about twice a second meanwhile: points done, total.
  std::function<void(size_t done, size_t total)> on_progress;
};

// A point's result as the bytes of a tandem.proto.SweepPoint (sim/proto/sim_result.proto), as a
// point's process sends it to the sweep, and back; `tandem search`'s ranks send theirs so too.
std::string encode_point_result(const PointResult& r);
PointResult decode_point_result(const std::string& bytes);

// Any list of points, each the whole list of its --set assignments, run as run_sweep runs the
// grid's (results[i] is points[i]); `tandem search` simulates its best candidates with it.
std::vector<PointResult> run_points(const std::string& scenario_path,
                                   const std::vector<std::vector<std::string>>& points, const RunOptions& options);

// Every point of the grid: the --set overrides first, then the point's --vary assignments.
SweepTable run_sweep(const std::string& scenario_path, const std::vector<std::string>& sets, const SweepGrid& grid,
                     const RunOptions& options);

}  // namespace tandem::sweep
