#include "search/walk_point.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <thread>

#include "search_ranks.pb.h"
#include "shared/error.h"
#include "shared/plan_summary.h"
#include "shared/schedule.h"

namespace tandem::search {

PlanVerdict plan_point(PointChecker& checker, const Candidate& c) {
  Scenario point;
  std::string message;
  if (!checker.check(candidate_sets(c), &point, &message))
    throw Error("search: internal: a valid point no longer loads: " + message, ErrorKind::kInternal);
  try {
    const PlanSummary plan = summarize(Schedule(std::move(point)));
    uint64_t tasks = 0;
    for (const RankPlan& r : plan.ranks) tasks += r.tasks;
    return {plan.peak_memory_bytes, plan.fits, tasks};
  } catch (const Error& e) {
    // offload auto's planner refuses a point where no placement fits one operator
    // (shared/auto_placement.cc, tandem sim's exit 3): out of memory, with no peak planned (the
    // largest, so that no "smallest planned peak" is this point's).
    if (e.kind() != ErrorKind::kOutOfMemory) throw;
    return {std::numeric_limits<int64_t>::max(), false};
  }
}

namespace {

std::string verdict_to_bytes(bool has, const PlanVerdict& v, int error_kind, const std::string& error) {
  proto::SearchPlanVerdict m;
  m.set_has(has);
  m.set_peak_bytes(v.peak_bytes);
  m.set_fits(v.fits);
  m.set_tasks(v.tasks);
  m.mutable_error()->set_kind(error_kind);
  m.mutable_error()->set_message(error);
  return m.SerializeAsString();
}

}  // namespace

std::string plan_share(PointChecker& checker, const std::vector<Candidate>& batch, int rank) {
  if (size_t(rank) >= batch.size()) return verdict_to_bytes(false, {}, 0, "");
  try {
    return verdict_to_bytes(true, plan_point(checker, batch[rank]), 0, "");
  } catch (const Error& e) {
    return verdict_to_bytes(false, {}, int(e.kind()), e.what());
  } catch (const std::exception& e) {
    return verdict_to_bytes(false, {}, int(ErrorKind::kInternal), e.what());
  }
}

size_t plan_jobs(const SearchOptions& options) {
  const int jobs = options.plan_jobs > 0 ? options.plan_jobs : options.jobs > 0 ? options.jobs : int(std::thread::hardware_concurrency());
  return size_t(std::max(1, jobs));
}

}  // namespace tandem::search
