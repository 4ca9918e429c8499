#include "sim/sim_trace.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "shared/error.h"
#include "sim/prediction_interval_calibrated.h"
#include "traces/trace_columns.h"
#include "traces/trace_writer.h"

namespace tandem::sim {

void write_sim_trace(const Schedule& schedule, const SimResult& r, const std::string& path) {
  const int world = schedule.world_size();
  const int fold = std::max(1, r.fold);
  if (r.lane0.empty() && world % fold != 0)
    throw Error("sim trace: fold " + std::to_string(fold) + " does not divide " + std::to_string(world) + " ranks",
                ErrorKind::kInternal);
  // What the trace keeps of each task, once per rank class; labels interned class by class in
  // task order, the order TraceBuilder gives them.
  TraceLabels labels;
  std::map<int, size_t> class_of_rep;
  std::vector<std::vector<TraceTaskInfo>> infos;
  for (const RankClass& c : schedule.rank_classes()) {
    class_of_rep.emplace(c.representative, infos.size());
    infos.push_back(trace_task_infos(schedule, schedule.program(c.representative), labels));
  }
  proto::Trace header =
      trace_header(schedule, "sim", schedule.scenario().cluster.gpu_name + " (SimGrid model)", labels);
  header.set_iteration_time_low_s(r.iteration_time_low_s);
  header.set_iteration_time_high_s(r.iteration_time_high_s);
  if (r.interval_evidence != IntervalEvidence::kReferenceResiduals) {  // sim/prediction_interval_calibrated.h
    const HostBenchResiduals& bench = HostBenchResiduals::builtin(r.scaled_to_state());
    proto::IntervalEvidence& e = *header.mutable_interval_evidence();
    e.set_name(interval_evidence_name(r.interval_evidence));
    e.set_calibration_runs(uint32_t(r.interval_calibration_runs));
    e.set_calibration_spread_half_width(r.interval_spread_half_width);
    e.set_bench_rows(uint32_t(bench.rows));
    e.set_bench_q10(bench.q10);
    e.set_bench_q50(bench.q50);
    e.set_bench_q90(bench.q90);
    e.set_state_communication_ratio(r.state_communication_ratio);
    e.set_state_memory_ratio(r.state_memory_ratio);
    e.set_state_compute_ratio(r.state_compute_ratio);
    e.set_calibrated_state(uint32_t(r.calibrated_state));
    e.set_calibrated_states(uint32_t(r.calibrated_states));
    e.set_state_matched(r.state_matched);
  }
  TraceWriter writer(path, header);
  proto::Rank record;
  std::vector<TraceEvent> events;
  std::vector<TraceSample> samples;
  // Each unit's recordings (kept once, under its lane 0's rank): where they lie in r.tasks / r.memory.
  std::map<int, std::pair<size_t, size_t>> task_range, sample_range;
  for (size_t i = 0; i < r.tasks.size();) {
    size_t j = i;
    while (j < r.tasks.size() && r.tasks[j].rank == r.tasks[i].rank) ++j;
    task_range[r.tasks[i].rank] = {i, j};
    i = j;
  }
  for (size_t i = 0; i < r.memory.size();) {
    size_t j = i;
    while (j < r.memory.size() && r.memory[j].rank == r.memory[i].rank) ++j;
    sample_range[r.memory[i].rank] = {i, j};
    i = j;
  }
  if (!r.lane0.empty() && int(r.lane0.size()) != world)
    throw Error("sim trace: lane map of " + std::to_string(r.lane0.size()) + " ranks", ErrorKind::kInternal);
  int built = -1;  // the lane 0 whose record `record` holds
  size_t class_index = 0;
  for (int rank = 0; rank < world; ++rank) {
    const int lane0 = r.lane0.empty() ? rank - rank % fold : r.lane0[rank];
    if (lane0 != built) {
      built = lane0;
      events.clear();
      samples.clear();
      if (auto t = task_range.find(lane0); t != task_range.end())
        for (size_t i = t->second.first; i < t->second.second; ++i) {
          const TaskTiming& e = r.tasks[i];
          if (!events.empty() && events.back().id == e.task)
            throw Error("sim trace: rank " + std::to_string(lane0) + " task " + std::to_string(e.task) +
                            ": recorded twice", ErrorKind::kInternal);
          events.push_back({e.task, e.start_s, e.end_s});
        }
      if (auto m = sample_range.find(lane0); m != sample_range.end())
        for (size_t i = m->second.first; i < m->second.second; ++i)
          samples.push_back({r.memory[i].time_s, r.memory[i].device_bytes, r.memory[i].host_bytes});
      std::stable_sort(samples.begin(), samples.end(),
                       [](const TraceSample& a, const TraceSample& b) { return a.time_s < b.time_s; });
      const auto it = class_of_rep.find(schedule.representative_of(lane0));
      if (it == class_of_rep.end())
        throw Error("sim trace: rank " + std::to_string(lane0) + " has no class", ErrorKind::kInternal);
      class_index = it->second;
      const std::vector<TraceTaskInfo>& info = infos[class_index];
      for (const TraceEvent& e : events)
        if (e.id >= info.size())
          throw Error("sim trace: rank " + std::to_string(lane0) + " task " + std::to_string(e.id) +
                          " outside its program", ErrorKind::kInternal);
      fill_trace_rank(lane0, events, info, samples, record);
    }
    // The lanes of a folded unit run the same class program (FoldPlanner), so their records differ
    // only in the rank number.
    if (rank != lane0 && class_of_rep.at(schedule.representative_of(rank)) != class_index)
      throw Error("sim trace: folded ranks " + std::to_string(lane0) + " and " + std::to_string(rank) +
                      " run different programs", ErrorKind::kInternal);
    record.set_rank(rank);
    writer.add_rank(record);
  }
  for (const auto& ranges : {task_range, sample_range})
    for (const auto& entry : ranges)
      if (entry.first >= world || (r.lane0.empty() ? entry.first % fold != 0 : r.lane0[entry.first] != entry.first))
        throw Error("sim trace: timings of a rank that is not a unit's first lane", ErrorKind::kInternal);
  writer.finish();
}

}  // namespace tandem::sim
