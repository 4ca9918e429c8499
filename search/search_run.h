// `tandem search`: every point of the space (search/search_space.h) checked by the loader's rules
// (search/point_check.h), the valid ones ranked by the analytical estimate (search/estimate.h),
// the planner's memory (shared/plan_summary.h) checked in that order until K points fit, and those
// K simulated with the full SimGrid backend (sim/simulation.h), in parallel worker processes
// (sim/sweep/sweep_runner.h, run_points).
//
// Under MPI (SearchOptions::ranks, `mpirun -n R tandem search`), the points are dealt to the ranks
// in enumeration order (point i to rank i mod R); each rank checks and estimates its points and
// sends rank 0 its counts and its valid points. Rank 0 sorts them by (estimate, enumeration
// order), which is the one-process order, and walks them as one process does; the memory of the
// next R points of that order is planned in rounds, one point per rank, and the points of a round
// past the K-th fit are dropped from the walk as one process never plans them. The K simulations
// are dealt out the same way and their results gathered on rank 0, so everything but the timings
// equals the one-process search.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "search/estimate.h"
#include "search/search_ranks.h"
#include "search/search_space.h"
#include "shared/resource_limit.h"
#include "sim/simulation.h"
#include "sim/sweep/sweep_table.h"

namespace tandem::search {

inline constexpr const char* kPrunedAsTie =
    "same estimate and planned peak memory as a better-ranked point (counted as its tie, not simulated)";
// A ranking, not a bound: the estimate is no lower bound on the simulated time (search/time_bound.h
// says which terms are not bounded), so a point cut here might simulate faster than one of the K.
inline constexpr const char* kPrunedByEstimate =
    "not among the K best by estimate (estimate not below the K-th fitting point's; the estimate is no bound on the "
    "simulated time; not simulated, memory not planned)";

struct SearchOptions {
  int gpus = 0;   // > 0: cluster.gpus (--gpus); else the scenario's
  int top = 16;   // K
  // --vary-batch: global_batch is searched too (search/search_space.h), and points are ranked by
  // time per sample (the estimate) and tokens/s (the simulation) instead of iteration time.
  bool vary_batch = false;
  bool simulate = true;
  int jobs = 0;   // simulations at a time (0: the hardware threads)
  // Processes that check and estimate the space (0: jobs): the enumeration is dealt to them by
  // pipeline group as to MPI ranks, each share but the first in a forked child, and merged as
  // rank 0 merges the ranks' shares, so the answer does not depend on it (only the timings do).
  int estimate_jobs = 0;
  // Points whose memory one process plans at a time, each in a forked child but the first
  // (0: jobs); the walk's answer does not depend on it. Under MPI each rank plans one.
  int plan_jobs = 0;
  // A round's points beyond the first are planned in forked children once a plan took at least
  // this long (wall seconds), else one after the other here: a fork costs milliseconds, a 105-layer
  // plan seconds. 0: always forked (the tests).
  double fork_plans_from_s = 0.1;
  // One process with the simulations: the walk's plans and the K simulations share the `jobs`
  // process slots (a point's simulation starts as soon as the walk takes it, in the child that
  // planned it), instead of the walk first and the simulations after it. The answer is the same
  // either way (search_run.cc OverlappedWalk); false runs them one after the other (the tests
  // compare both).
  bool overlap = true;
  ResourceLimit limit;
  sim::SimOptions sim;
  std::function<void(size_t done, size_t total)> on_progress;
  const SearchRanks* ranks = nullptr;  // nullptr: this process alone
  // Points whose model states alone exceed HBM are out of memory without a plan (search/memory_bound.h);
  // false plans every point the walk reaches (the tests compare both).
  bool memory_bound = true;
  // Points of a layout a layout rule refuses take the loader's message for the first of them
  // (search/layout_rules.h), and the software switches' settings of a point refused with every
  // switch off and every switch on alike take that message (search_run.cc, rank_part); false
  // loads every point (the tests compare both).
  bool rule_shortcuts = true;
  // With rule_shortcuts: the points a shortcut's verdict covers are counted in closed form, a
  // block of switch settings, a row or a whole pipeline group at once (search/search_space.h
  // PointGroup), instead of visited one by one; false visits each (the tests compare both).
  bool closed_form_counts = true;
};

struct RuleCount {
  uint64_t count = 0;
  std::string example;  // the loader's whole message for the first point it refused
};

struct RankedPoint {
  Candidate candidate;
  std::vector<std::string> sets;  // the point's assignments (the user's --set list not included)
  Estimate estimate;
  int64_t planned_peak_bytes = 0;  // the planner's peak over ranks
  uint64_t ties = 0;               // points of the same estimate and planned peak (kPrunedAsTie)
  sweep::PointResult simulated;    // when simulated
};

struct SearchResult {
  bool on_root = true;  // false on the ranks other than 0 of an MPI search: nothing else is set
  std::string scenario_path, scenario_name;
  std::vector<std::string> sets;  // the user's --set list (with cluster.gpus=N for --gpus)
  int gpus = 0;
  bool vary_batch = false;  // ranked by throughput (see SearchOptions)
  int64_t hbm_bytes = 0;
  uint64_t points = 0, valid = 0;
  std::map<std::string, RuleCount> invalid;  // by rule (rule_of)
  std::map<std::string, uint64_t> pruned;    // by rule
  // The walk's memory checks (in estimate order until K fit): memory_planned counts the points
  // checked, out_of_memory those over HBM, by the planner's peak or, without a plan, by the lower
  // bound of search/memory_bound.h (out_of_memory_by_bound of them). The JSON keeps the names
  // memory_planned / out_of_memory of the searches before the bound, whose figures these equal.
  uint64_t out_of_memory = 0;
  uint64_t memory_planned = 0;
  uint64_t out_of_memory_by_bound = 0;
  std::vector<RankedPoint> best;  // the K best fitting points: by simulated time (tokens/s with
                                  // vary_batch) when simulated (failed simulations last), else by
                                  // estimate
  size_t probes = 0;              // layer probes generated (distinct settings, over all ranks)
  double estimate_wall_s = 0;     // enumeration + checks + estimates (the slowest rank's)
  double estimate_cpu_s = 0;      // the same in CPU time, summed over the ranks
};

// Throws Error (bad input, exit 2) for a scenario or --set the loader refuses, a space with no
// valid point (naming the rule that refused the most points), or no point that fits in memory
// (naming the smallest planned peak and the HBM).
SearchResult run_search(const std::string& scenario_path, const std::vector<std::string>& sets,
                        const SearchOptions& options);

}  // namespace tandem::search
