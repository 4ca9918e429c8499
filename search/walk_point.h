// A valid point of the search's memory walk and the planner's verdict on it: what the walk of
// search_run.cc (one process or MPI ranks) and the overlapped walk (search/overlapped_walk.h)
// share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "search/estimate.h"
#include "search/point_check.h"
#include "search/search_run.h"
#include "search/search_space.h"

namespace tandem::search {

struct Valid {
  Candidate candidate;
  Estimate estimate;
  uint64_t order = 0;  // enumeration order (from 1): ties keep it
};

// The planner's verdict on one point.
struct PlanVerdict {
  int64_t peak_bytes = 0;
  bool fits = false;
  // The tasks of the point's class programs (the plan's, RankPlan::tasks): what its simulation
  // generates and replays, so that its wall time grows with them (the overlapped walk starts the
  // longest simulations first).
  uint64_t tasks = 0;
};

// What the search minimizes: the iteration time, or with --vary-batch the time per sample.
inline double score(const Candidate& c, const Estimate& e, bool vary_batch) {
  return vary_batch && c.global_batch > 0 ? e.iteration_s / c.global_batch : e.iteration_s;
}

// The planner's verdict on a valid point.
PlanVerdict plan_point(PointChecker& checker, const Candidate& c);

// Plans this rank's point of the batch (rank k the k-th, if any) and returns the verdict as a
// proto::SearchPlanVerdict's bytes; errors travel as text in it.
std::string plan_share(PointChecker& checker, const std::vector<Candidate>& batch, int rank);

// Points planned at a time by one process: SearchOptions::plan_jobs, else the simulations'.
size_t plan_jobs(const SearchOptions& options);

}  // namespace tandem::search
