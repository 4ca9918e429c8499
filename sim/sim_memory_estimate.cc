#include "sim/sim_memory_estimate.h"

#include <algorithm>
#include <variant>

#include "shared/resource_limit.h"

namespace tandem::sim {

// The estimate, term by term (bytes). The constants were fitted on GPT-3 175B (t8 p16) at 4096,
// 2048 and 1024 GPUs (0.72, 1.44 and 2.87 million class tasks: 237, 402 and 900 MB peak resident).
// Checked against the peak resident size (VmHWM) of the parent plus the simulation process:
// GPT-3 1024 GPUs --json: 1.0 GiB estimated, 0.98 GiB measured (120 + 879 MiB); with --trace:
// 3.4 GiB estimated, 2.9 GiB measured (114 + 2958 MiB); Llama 2 70B --trace: 0.2 GiB estimated,
// 0.19 GiB measured (57 + 141 MiB). Terms:
//  - kBase: the binary, SimGrid, protobuf, the Schedule.
//  - programs: each class program is generated and analysed once in the simulation process:
//    Task structs, dependency lists, per-task replay tables. 350 B a task (the measured slope is
//    230 to 350 B).
//  - replay states: one per replayed unit (the tp lanes of a (dp, pp) coordinate are one unit when
//    tensor-parallel folding is on, sim/replay_engine.h): a done bit per task, a byte per buffer,
//    plus the per-rank tables of the platform and the replay (kPerRank).
//  - trace (--trace or --timeline): the replay records each task (32 B) and each Alloc/Free (32 B)
//    once per unit; the vectors grow by doubling and the simulation process keeps freed blocks in
//    its heap, so twice that. Writing the file holds one rank record at a time (kRecordPerTask).
//  - timeline: the parent reads the whole trace back (45 B an event in memory) and builds the
//    Chrome JSON text (about 160 B an event).
// Folding may be declined at run time (sim/replay_engine.cc choose_fold) or rerun unfolded when
// not exact; the estimate assumes it is taken where the options and the strategy allow it.
namespace {

constexpr int64_t kBase = int64_t(64) << 20;
constexpr int64_t kProgramPerTask = 350;
constexpr int64_t kPerRank = 512;
constexpr int64_t kRecordingPerEntry = 2 * 32;
constexpr int64_t kRecordPerTask = 120;
constexpr int64_t kTimelinePerEvent = 45 + 160;

int expected_fold(const Schedule& schedule, const SimOptions& o) {
  const StrategySpec& s = schedule.scenario().strategy;
  // Replica folding: a pure data-parallel schedule is one state (FoldPlanner::choose_replica_fold).
  if (o.fold_data_parallel && o.closed_form_uncontended && o.share_class_programs && s.tp == 1 && s.pp == 1 &&
      s.sp == 1 && schedule.world_size() > 1)
    return schedule.world_size();
  const bool may_fold = o.fold_tensor_parallel && o.closed_form_uncontended && o.share_class_programs &&
                        !schedule.scenario().software.tp_comm_overlap && s.tp > 1 && s.tp <= schedule.scenario().cluster.gpus_per_node;
  return may_fold ? s.tp : 1;
}

}  // namespace

SimWork count_sim_work(const Schedule& schedule, const SimOptions& options) {
  SimWork w;
  w.world = schedule.world_size();
  w.fold = expected_fold(schedule, options);
  w.units = w.world / w.fold;
  const int gpn = std::max(1, schedule.scenario().cluster.gpus_per_node);
  for (const RankClass& c : schedule.rank_classes()) {
    int64_t tasks = 0, allocs = 0, buffers = 0;
    double squares = 0;
    {
      const Program p = schedule.program(c.representative);
      tasks = int64_t(p.tasks.size());
      buffers = int64_t(p.buffers.size());
      for (const Task& t : p.tasks) {
        allocs += std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op);
        if (const auto* coll = std::get_if<Collective>(&t.op)) {
          const std::vector<int>& ranks = schedule.group(coll->group).ranks;
          const auto [lo, hi] = std::minmax_element(ranks.begin(), ranks.end());
          const bool spans_nodes = !ranks.empty() && *lo / gpn != *hi / gpn;
          if (spans_nodes) squares += double(ranks.size());
        }
      }
    }
    w.collective_square += double(c.count) * squares;
    const int64_t members = c.count;
    w.class_tasks = checked_add(w.class_tasks, tasks, "memory estimate");
    w.max_tasks = std::max(w.max_tasks, tasks);
    w.max_buffers = std::max(w.max_buffers, buffers);
    w.rank_tasks = checked_add(w.rank_tasks, checked_mul(members, tasks, "memory estimate"), "memory estimate");
    w.rank_entries =
        checked_add(w.rank_entries, checked_mul(members, tasks + allocs, "memory estimate"), "memory estimate");
  }
  return w;
}

MemoryEstimate estimate_memory(const SimWork& w, bool tracing, bool timeline) {
  int64_t bytes = kBase;
  bytes = checked_add(bytes, checked_mul(w.class_tasks, kProgramPerTask, "memory estimate"), "memory estimate");
  bytes = checked_add(bytes, checked_mul(w.units, w.max_tasks / 8 + w.max_buffers, "memory estimate"),
                      "memory estimate");
  bytes = checked_add(bytes, checked_mul(w.world, kPerRank, "memory estimate"), "memory estimate");
  std::string how = std::to_string(w.class_tasks) + " tasks in class programs x " + std::to_string(kProgramPerTask) +
                    " B, " + std::to_string(w.units) + " replay states of up to " + std::to_string(w.max_tasks) +
                    " tasks, " + std::to_string(w.world) + " ranks x " + std::to_string(kPerRank) + " B";
  if (tracing || timeline) {
    // Entries recorded: every rank's, divided among the fold lanes that share them.
    const int64_t recorded = w.rank_entries / w.fold;
    bytes = checked_add(bytes, checked_mul(recorded, kRecordingPerEntry, "memory estimate"), "memory estimate");
    bytes = checked_add(bytes, checked_mul(w.max_tasks, kRecordPerTask, "memory estimate"), "memory estimate");
    how += ", " + std::to_string(recorded) + " recorded times and memory samples x " +
           std::to_string(kRecordingPerEntry) + " B";
  }
  if (timeline) {
    bytes = checked_add(bytes, checked_mul(w.rank_tasks, kTimelinePerEvent, "memory estimate"), "memory estimate");
    how += ", " + std::to_string(w.rank_tasks) + " timeline events x " + std::to_string(kTimelinePerEvent) + " B";
  }
  return {bytes, how};
}

MemoryEstimate estimate_memory(const Schedule& schedule, const SimOptions& options, bool timeline) {
  return estimate_memory(count_sim_work(schedule, options), !options.trace_path.empty() || timeline, timeline);
}

}  // namespace tandem::sim
