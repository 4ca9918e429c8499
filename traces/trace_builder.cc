#include "traces/trace_builder.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "shared/error.h"

namespace tandem {
namespace {

std::string where(int rank, TaskId id) {
  return "trace builder: rank " + std::to_string(rank) + " task " + std::to_string(id);
}

}  // namespace

TraceBuilder::TraceBuilder(const Schedule& schedule, std::string backend, std::string machine)
    : schedule_(&schedule), backend_(std::move(backend)), machine_(std::move(machine)) {
  if (backend_ != "sim" && backend_ != "host" && backend_ != "cuda")
    throw Error("trace builder: backend '" + backend_ + "' is not one of sim, host, cuda");
  ranks_.resize(schedule.world_size());
}

TraceBuilder::~TraceBuilder() = default;
TraceBuilder::TraceBuilder(TraceBuilder&&) noexcept = default;
TraceBuilder& TraceBuilder::operator=(TraceBuilder&&) noexcept = default;

TraceBuilder::RankState& TraceBuilder::state(int rank, const char* what) {
  if (finished_) throw Error(std::string("trace builder: ") + what + " after finish");
  if (rank < 0 || rank >= int(ranks_.size()))
    throw Error(std::string("trace builder: ") + what + " for rank " + std::to_string(rank) +
                " outside world of " + std::to_string(ranks_.size()));
  if (!ranks_[rank]) ranks_[rank] = std::make_unique<RankState>();
  return *ranks_[rank];
}

void TraceBuilder::begin_rank(const Program& program) {
  RankState& r = state(program.rank, "begin_rank");
  if (r.begun) throw Error("trace builder: begin_rank called twice for rank " + std::to_string(program.rank));
  r.tasks = trace_task_infos(*schedule_, program, labels_);
  r.begun = true;
}

void TraceBuilder::task(int rank, TaskId id, double start_s, double end_s) {
  RankState& r = state(rank, "task");
  if (!r.begun) throw Error(where(rank, id) + ": begin_rank was not called for the rank");
  if (id >= r.tasks.size())
    throw Error(where(rank, id) + ": the rank's program has " + std::to_string(r.tasks.size()) + " tasks");
  if (!std::isfinite(start_s) || !std::isfinite(end_s))
    throw Error(where(rank, id) + ": time is not finite");
  if (end_s < start_s)
    throw Error(where(rank, id) + ": end_s " + std::to_string(end_s) + " < start_s " + std::to_string(start_s));
  r.events.push_back({id, start_s, end_s});
}

void TraceBuilder::memory(int rank, double time_s, int64_t device_bytes, int64_t host_bytes) {
  RankState& r = state(rank, "memory");
  if (!std::isfinite(time_s))
    throw Error("trace builder: rank " + std::to_string(rank) + " memory sample time is not finite");
  r.memory.push_back({time_s, device_bytes, host_bytes});
}

proto::Trace TraceBuilder::finish() {
  if (finished_) throw Error("trace builder: finish called twice");
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    if (!ranks_[rank]) continue;
    std::vector<TraceEvent>& events = ranks_[rank]->events;
    std::sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) { return a.id < b.id; });
    for (size_t i = 1; i < events.size(); ++i)
      if (events[i].id == events[i - 1].id) throw Error(where(int(rank), events[i].id) + ": recorded twice");
  }
  finished_ = true;

  proto::Trace trace = trace_header(*schedule_, backend_, machine_, labels_);
  uint64_t event_count = 0;
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    if (!ranks_[rank]) continue;
    RankState& st = *ranks_[rank];
    std::stable_sort(st.memory.begin(), st.memory.end(),
                     [](const TraceSample& a, const TraceSample& b) { return a.time_s < b.time_s; });
    fill_trace_rank(int(rank), st.events, st.tasks, st.memory, *trace.add_ranks());
    event_count += uint64_t(st.events.size());
    ranks_[rank].reset();
  }
  trace.set_event_count(event_count);
  ranks_.clear();
  labels_ = TraceLabels();
  return trace;
}

}  // namespace tandem
