#include "traces/trace_columns.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "shared/error.h"
#include "traces/scenario_digest.h"
#include "traces/task_label.h"
#include "traces/trace_builder.h"

namespace tandem {

uint32_t TraceLabels::intern(std::string label) {
  auto [it, inserted] = ids_.try_emplace(std::move(label), uint32_t(labels_.size()));
  if (inserted) labels_.push_back(it->first);
  return it->second;
}

std::vector<TraceTaskInfo> trace_task_infos(const Schedule& schedule, const Program& program, TraceLabels& labels) {
  std::vector<TraceTaskInfo> infos(program.tasks.size());
  for (size_t i = 0; i < program.tasks.size(); ++i) {
    const Task& t = program.tasks[i];
    if (t.id != i)
      throw Error("trace builder: rank " + std::to_string(program.rank) + " task " + std::to_string(t.id) +
                  ": found at index " + std::to_string(i) + " of the program (a task id is its index)");
    TraceTaskInfo& info = infos[i];
    info.stream = uint8_t(t.stream);
    info.label = labels.intern(task_label(schedule, program, t));
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
  return infos;
}

proto::Trace trace_header(const Schedule& schedule, const std::string& backend, const std::string& machine,
                          const TraceLabels& labels) {
  proto::Trace trace;
  trace.set_format(kTraceFormat);
  trace.set_scenario_name(schedule.scenario().name);
  trace.set_scenario_digest(scenario_digest(schedule.scenario()));
  trace.set_backend(backend);
  trace.set_machine(machine);
  trace.set_world_size(int32_t(schedule.world_size()));
  trace.mutable_labels()->Reserve(int(labels.labels().size()));
  for (const std::string& l : labels.labels()) trace.add_labels(l);
  return trace;
}

void fill_trace_rank(int rank, std::span<const TraceEvent> events, const std::vector<TraceTaskInfo>& infos,
                     std::span<const TraceSample> samples, proto::Rank& out) {
  out.Clear();
  out.set_rank(int32_t(rank));
  proto::Events* ev = out.mutable_events();
  const int n = int(events.size());
  ev->mutable_task_id()->Reserve(n);
  ev->mutable_stream()->Reserve(n);
  ev->mutable_start_s()->Reserve(n);
  ev->mutable_end_s()->Reserve(n);
  ev->mutable_bytes()->Reserve(n);
  ev->mutable_flops()->Reserve(n);
  ev->mutable_label()->Reserve(n);
  for (const TraceEvent& e : events) {
    const TraceTaskInfo& info = infos[e.id];
    ev->add_task_id(e.id);
    ev->add_stream(info.stream);
    ev->add_start_s(e.start_s);
    ev->add_end_s(e.end_s);
    ev->add_bytes(info.bytes);
    ev->add_flops(info.flops);
    ev->add_label(info.label);
  }
  proto::MemorySamples* mem = out.mutable_memory();
  int64_t peak_device = 0, peak_host = 0;
  for (const TraceSample& s : samples) {
    mem->add_time_s(s.time_s);
    mem->add_device_bytes(s.device_bytes);
    mem->add_host_bytes(s.host_bytes);
    peak_device = std::max(peak_device, s.device_bytes);
    peak_host = std::max(peak_host, s.host_bytes);
  }
  out.set_peak_device_bytes(peak_device);
  out.set_peak_host_bytes(peak_host);
}

}  // namespace tandem
