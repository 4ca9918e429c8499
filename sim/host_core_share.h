// Ranks that share cores share them in the simulation too (issue 13).
//
// Why: `tandem run` starts every rank of a host run on the one machine it runs on, one process
// per rank with its BLAS threads (exec/core_placement.h: one per rank). When ranks x threads
// exceed the machine's cores (CI: 4 ranks on 2 cores), the ranks that compute at the same moment
// take turns on the cores: a kernel that ran in 10 us with a core to itself takes about 20 us
// while four ranks compute on two cores. The calibration's kernel times are the kernels' time
// alone (traces/calibration/shared_core_time.h takes the sharing out of a run that had it), so
// the replay must put it back for the run it predicts.
//
// The model: processor sharing, the fluid law of the OS scheduler over its time slices. A unit
// (a replayed rank; with tensor-parallel folding, its lanes) demands `threads(unit)` threads while
// its compute stream runs (a kernel, the time between tasks the replay runs before it, the
// Allocs/Frees charged with it); a unit that waits on a collective or is idle demands none (an
// oversubscribed rank yields while it waits, exec/core_placement.h). Each running thread gets
// min(1, cores / threads demanded) of a core, so every running unit advances its work at that
// rate, re-timed whenever a unit starts or stops computing.
//
// All running units advance at one rate, so the replay keeps one virtual clock: the work a
// running unit has done since a common origin, which grows at the rate. A run that starts at
// virtual time V with work w ends when the clock reaches V + w; the runs end in that order whatever
// the rate does, so only the earliest needs a timer (re-timed, with a new generation, at each
// change of rate): O(log units) per start or end.
//
// Not modelled: the scheduler's slices themselves (a kernel is descheduled for a whole slice or
// not at all; the fluid law holds for a step's total, not for each kernel), the late wake-up of
// a rank that yielded (a cost to measure), and the compute-like tasks of other streams (host
// optimizer work beside the compute stream), which keep their own timers.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "sim/timer_queue.h"

namespace tandem::sim {

class HostCoreShare {
 public:
  // cores: the machine's (> 0); threads[unit]: the threads a unit computes with (> 0).
  HostCoreShare(TimerQueue& timers, double cores, std::vector<double> threads);

  // Unit `unit` starts a compute run of `work_s` (its time with a core per thread) made of the
  // `count` tasks from `first_task` (kept for the Timer::kComputeDone it ends with).
  void start(int unit, double work_s, uint32_t first_task, uint32_t count, double now);
  // A Timer::kSharedComputeDone fired (first_task: its generation): when it is the current one,
  // the run that ended as a kComputeDone timer (target: the unit); nullopt for a stale one.
  std::optional<Timer> done(uint32_t generation, double now);
  // The share of a core each running thread gets now: min(1, cores / threads demanded).
  double rate() const;
  size_t running() const { return runs_.size(); }

 private:
  void advance(double now);  // the virtual clock up to `now`
  void schedule(double now);  // a timer for the earliest run to end

  TimerQueue& timers_;
  double cores_;
  std::vector<double> threads_;
  double demand_ = 0;   // threads of the running units
  double virtual_ = 0;  // work a running unit has done since the origin
  double since_ = 0;    // the simulated time virtual_ is of
  std::set<std::pair<double, int>> runs_;  // (virtual end, unit)
  std::vector<std::pair<uint32_t, uint32_t>> tasks_;  // by unit: (first task, count) of its run
  uint32_t generation_ = 0;
};

}  // namespace tandem::sim
