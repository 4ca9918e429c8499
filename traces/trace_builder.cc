#include "traces/trace_builder.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "shared/error.h"
#include "traces/scenario_digest.h"
#include "traces/task_label.h"

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

uint32_t TraceBuilder::intern(std::string label) {
  auto [it, inserted] = label_ids_.try_emplace(std::move(label), uint32_t(labels_.size()));
  if (inserted) labels_.push_back(it->first);
  return it->second;
}

void TraceBuilder::begin_rank(const Program& program) {
  RankState& r = state(program.rank, "begin_rank");
  if (r.begun) throw Error("trace builder: begin_rank called twice for rank " + std::to_string(program.rank));
  r.begun = true;
  r.tasks.resize(program.tasks.size());
  for (size_t i = 0; i < program.tasks.size(); ++i) {
    const Task& t = program.tasks[i];
    if (t.id != i)
      throw Error(where(program.rank, t.id) + ": found at index " + std::to_string(i) +
                  " of the program (a task id is its index)");
    TaskInfo& info = r.tasks[i];
    info.stream = uint8_t(t.stream);
    info.label = intern(task_label(*schedule_, program, t));
    if (const auto* c = std::get_if<Compute>(&t.op)) {
      info.bytes = std::llround(c->bytes_moved());
      info.flops = c->matmul_flops();
    } else if (const auto* c = std::get_if<Collective>(&t.op)) {
      info.bytes = c->bytes;
    } else if (const auto* c = std::get_if<SendRecv>(&t.op)) {
      info.bytes = c->bytes;
    } else if (const auto* c = std::get_if<Copy>(&t.op)) {
      info.bytes = c->bytes;
    }
  }
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
    std::vector<Event>& events = ranks_[rank]->events;
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.id < b.id; });
    for (size_t i = 1; i < events.size(); ++i)
      if (events[i].id == events[i - 1].id) throw Error(where(int(rank), events[i].id) + ": recorded twice");
  }
  finished_ = true;

  proto::Trace trace;
  trace.set_format(kTraceFormat);
  trace.set_scenario_name(schedule_->scenario().name);
  trace.set_scenario_digest(scenario_digest(schedule_->scenario()));
  trace.set_backend(backend_);
  trace.set_machine(machine_);
  trace.set_world_size(int32_t(ranks_.size()));
  trace.mutable_labels()->Reserve(int(labels_.size()));
  for (std::string& l : labels_) trace.add_labels(std::move(l));

  uint64_t event_count = 0;
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    if (!ranks_[rank]) continue;
    RankState& st = *ranks_[rank];
    proto::Rank* r = trace.add_ranks();
    r->set_rank(int32_t(rank));
    proto::Events* ev = r->mutable_events();
    const int n = int(st.events.size());
    ev->mutable_task_id()->Reserve(n);
    ev->mutable_stream()->Reserve(n);
    ev->mutable_start_s()->Reserve(n);
    ev->mutable_end_s()->Reserve(n);
    ev->mutable_bytes()->Reserve(n);
    ev->mutable_flops()->Reserve(n);
    ev->mutable_label()->Reserve(n);
    for (const Event& e : st.events) {
      const TaskInfo& info = st.tasks[e.id];
      ev->add_task_id(e.id);
      ev->add_stream(info.stream);
      ev->add_start_s(e.start_s);
      ev->add_end_s(e.end_s);
      ev->add_bytes(info.bytes);
      ev->add_flops(info.flops);
      ev->add_label(info.label);
    }
    event_count += uint64_t(n);

    std::stable_sort(st.memory.begin(), st.memory.end(),
                     [](const Sample& a, const Sample& b) { return a.time_s < b.time_s; });
    proto::MemorySamples* mem = r->mutable_memory();
    int64_t peak_device = 0, peak_host = 0;
    for (const Sample& s : st.memory) {
      mem->add_time_s(s.time_s);
      mem->add_device_bytes(s.device_bytes);
      mem->add_host_bytes(s.host_bytes);
      peak_device = std::max(peak_device, s.device_bytes);
      peak_host = std::max(peak_host, s.host_bytes);
    }
    r->set_peak_device_bytes(peak_device);
    r->set_peak_host_bytes(peak_host);
    ranks_[rank].reset();
  }
  trace.set_event_count(event_count);
  ranks_.clear();
  label_ids_.clear();
  labels_.clear();
  return trace;
}

}  // namespace tandem
