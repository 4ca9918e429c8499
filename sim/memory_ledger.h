// Device and host memory of every replayed state: what Alloc and Free add and remove, the peaks,
// the samples for --trace/--timeline (SimOptions::record_memory), and the OomReport when an
// allocation does not fit.
//
// Why separate: memory takes no time and touches nothing else in the replay; keeping the byte
// counts, the live-buffer flags and the capacity rules in one place makes the accounting easy to
// read against docs/sim.md. Device memory is per GPU; host memory is per node (a folded state's
// host allocation is charged once per tp lane). Alloc of a live buffer or Free of a dead one is
// bad input (Error); an allocation over capacity fills the report and throws OutOfMemory.
#pragma once

#include <cstdint>
#include <vector>

#include "shared/schedule.h"
#include "sim/platform_builder.h"
#include "sim/program_info.h"
#include "sim/simulation.h"

namespace tandem::sim {

class MemoryLedger {
 public:
  // Thrown when an allocation does not fit; the report is in the result given to the constructor.
  class OutOfMemory {};

  // `result`: receives the memory samples and the OOM report.
  MemoryLedger(const Schedule& schedule, const SimOptions& options, const Platform& platform, SimResult& result);

  // Size the state's tables for its program and hold the reserved bytes (SimOptions); `nodes`:
  // the nodes its lanes lie on and how many on each (FoldPlanner::unit_nodes), for host memory.
  void add_unit(const ProgramInfo& info, RankStats& stats, std::vector<std::pair<int, int>> nodes);

  // The Alloc or Free task `t` of `unit` (whose lane 0 is `rank`) at time `now`.
  void apply(int unit, int rank, const ProgramInfo& info, const Task& t, bool alloc, double now, RankStats& stats);

 private:
  struct UnitMemory {
    std::vector<uint8_t> live;  // by buffer index
    int64_t device_bytes = 0, host_bytes = 0;
    std::vector<std::pair<int, int>> nodes;  // (node, lanes on it), ascending
  };
  void record(const UnitMemory& u, int rank, double now);
  [[noreturn]] void out_of_memory(const UnitMemory& u, int rank, const ProgramInfo& info, const Buffer& b, bool host,
                                  int64_t in_use, int64_t capacity, double now);

  const SimOptions& options_;
  const Platform& platform_;
  const ClusterSpec& cluster_;
  SimResult& result_;
  const int64_t hbm_bytes_;
  std::vector<UnitMemory> units_;
  std::vector<int64_t> node_host_bytes_;
};

}  // namespace tandem::sim
