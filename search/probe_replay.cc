#include "search/probe_replay.h"

#include <algorithm>

#include "shared/error.h"
#include "shared/reference_executor.h"

namespace tandem::search {

namespace {

// ReplayCosts as the reference executor's task cost: a collective among its group's members, a
// message between the program's rank and its peer, anything else alone on its stream.
TaskCost task_cost(const std::vector<ProcessGroup>& groups, const ReplayCosts& costs) {
  return [&groups, &costs](int rank, const Program&, const Task& t) {
    if (const auto* c = std::get_if<Collective>(&t.op)) return costs.collective(*c, groups.at(c->group).ranks);
    if (const auto* m = std::get_if<SendRecv>(&t.op))
      return m->is_send ? costs.p2p(rank, m->peer, *m) : costs.p2p(m->peer, rank, *m);
    return costs.own(t);
  };
}

TaskTimes times_of(const std::vector<TaskTime>& run) {
  TaskTimes t;
  t.start_s.reserve(run.size());
  t.end_s.reserve(run.size());
  for (const TaskTime& x : run) t.start_s.push_back(x.start_s), t.end_s.push_back(x.end_s);
  return t;
}

int world_of(const std::vector<ProcessGroup>& groups, int at_least) {
  int world = at_least;
  for (const ProcessGroup& g : groups)
    for (int r : g.ranks) world = std::max(world, r + 1);
  return world;
}

// The reference executor's refusal (a collective or message never matched) is the search's bug.
template <class F>
auto internal(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(std::string("search: internal: a layer probe's programs do not finish: ") + e.what(), ErrorKind::kInternal);
  }
}

}  // namespace

std::vector<TaskTimes> replay_programs(const std::vector<ProcessGroup>& groups, const std::vector<Program>& programs,
                                       const ReplayCosts& costs) {
  const ReferenceRun run = internal(
      [&] { return run_reference(world_of(groups, int(programs.size())), groups, programs, task_cost(groups, costs)); });
  std::vector<TaskTimes> out;
  for (const Program& p : programs) out.push_back(times_of(run.times.at(p.rank)));
  return out;
}

TaskTimes replay_symmetric(const std::vector<ProcessGroup>& groups, const Program& program, const ReplayCosts& costs) {
  ReferenceOptions o;
  o.translated_peers = true;
  const ReferenceRun run = internal(
      [&] { return run_reference(world_of(groups, program.rank + 1), groups, {program}, task_cost(groups, costs), o); });
  return times_of(run.times.at(program.rank));
}

}  // namespace tandem::search
