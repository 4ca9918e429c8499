#include "sim/sim_trace.h"

#include <algorithm>
#include <map>
#include <vector>

#include "shared/error.h"
#include "traces/trace_columns.h"
#include "traces/trace_writer.h"

namespace tandem::sim {

void write_sim_trace(const Schedule& schedule, const SimResult& r, const std::string& path) {
  const int world = schedule.world_size();
  const int fold = std::max(1, r.fold);
  if (world % fold != 0)
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
  TraceWriter writer(path, header);
  proto::Rank record;
  std::vector<TraceEvent> events;
  std::vector<TraceSample> samples;
  size_t task = 0, sample = 0;
  for (int unit = 0; unit < world / fold; ++unit) {
    const int lane0 = unit * fold;
    events.clear();
    samples.clear();
    for (; task < r.tasks.size() && r.tasks[task].rank == lane0; ++task) {
      const TaskTiming& t = r.tasks[task];
      if (!events.empty() && events.back().id == t.task)
        throw Error("sim trace: rank " + std::to_string(lane0) + " task " + std::to_string(t.task) +
                        ": recorded twice", ErrorKind::kInternal);
      events.push_back({t.task, t.start_s, t.end_s});
    }
    for (; sample < r.memory.size() && r.memory[sample].rank == lane0; ++sample) {
      const MemorySample& m = r.memory[sample];
      samples.push_back({m.time_s, m.device_bytes, m.host_bytes});
    }
    std::stable_sort(samples.begin(), samples.end(),
                     [](const TraceSample& a, const TraceSample& b) { return a.time_s < b.time_s; });
    const auto it = class_of_rep.find(schedule.representative_of(lane0));
    if (it == class_of_rep.end())
      throw Error("sim trace: rank " + std::to_string(lane0) + " has no class", ErrorKind::kInternal);
    const std::vector<TraceTaskInfo>& info = infos[it->second];
    for (const TraceEvent& e : events)
      if (e.id >= info.size())
        throw Error("sim trace: rank " + std::to_string(lane0) + " task " + std::to_string(e.id) + " outside its program",
                    ErrorKind::kInternal);
    fill_trace_rank(lane0, events, info, samples, record);
    // The lanes of a folded unit run the same class program (ReplayEngine::choose_fold), so their
    // records differ only in the rank number.
    for (int m = 0; m < fold; ++m) {
      if (m > 0 && class_of_rep.at(schedule.representative_of(lane0 + m)) != it->second)
        throw Error("sim trace: folded ranks " + std::to_string(lane0) + " and " + std::to_string(lane0 + m) +
                        " run different programs", ErrorKind::kInternal);
      record.set_rank(lane0 + m);
      writer.add_rank(record);
    }
  }
  if (task != r.tasks.size() || sample != r.memory.size())
    throw Error("sim trace: timings of a rank that is not a unit's first lane", ErrorKind::kInternal);
  writer.finish();
}

}  // namespace tandem::sim
