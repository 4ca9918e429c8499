#include "shared/pipeline_memory.h"

#include <algorithm>

#include "shared/error.h"
#include "shared/resource_limit.h"
#include "shared/rank_grid.h"
#include "shared/reference_executor.h"
#include "shared/roofline_cost.h"
#include "shared/worst_case_peak.h"

namespace tandem {
namespace {

// An Alloc (+bytes) or Free (-bytes) of a root buffer.
struct MemoryOp {
  int64_t delta_bytes = 0;
  TaskId task = kNoId;
  BufferRole role = BufferRole::kActivation;
  bool device = true;
};

std::vector<MemoryOp> memory_ops(const Program& p) {
  std::vector<MemoryOp> ops;
  for (const Task& t : p.tasks) {
    const Alloc* a = std::get_if<Alloc>(&t.op);
    const Free* f = std::get_if<Free>(&t.op);
    if (!a && !f) continue;
    const Buffer& b = p.buffers.at(a ? a->buffer : f->buffer);
    ops.push_back({a ? b.bytes : -b.bytes, t.id, b.role, b.placement == Placement::kDevice});
  }
  return ops;
}

}  // namespace

std::vector<int> pipeline_ranks(const Schedule& s, int rank) {
  const RankGrid& g = s.grid();
  if (rank < 0 || rank >= s.world_size())
    throw Error("pipeline memory: rank " + std::to_string(rank) + " is not in the schedule");
  RankCoord c = g.coord(rank);
  std::vector<int> ranks;
  for (c.pp = 0; c.pp < g.pp(); ++c.pp) ranks.push_back(g.rank(c));
  return ranks;
}

namespace {

std::vector<MemoryProfile> walk(const Schedule& s, int rank, const TaskCost& cost,
                                const std::function<void(const Program&)>& on_program) {
  const std::vector<int> ranks = pipeline_ranks(s, rank);
  const int stages = int(ranks.size());
  std::vector<std::vector<MemoryOp>> ops(stages);
  std::vector<MemoryProfile> profiles(stages);
  ReferenceOptions o;
  o.ranks = ranks;
  o.memory_in_program_order = true;
  o.on_program = [&](const Program& p) {
    if (on_program) on_program(p);
    const int stage = s.grid().coord(p.rank).pp;
    profiles[stage] = memory_profile(p);  // checks the program, and gives the model states
    ops[stage] = memory_ops(p);
  };
  const ReferenceRun run = run_reference(s, cost, o);

  for (int i = 0; i < stages; ++i) {
    const std::vector<TaskTime>& times = run.times[ranks[i]];
    std::vector<MemoryOp>& rank_ops = ops[i];
    std::stable_sort(rank_ops.begin(), rank_ops.end(), [&](const MemoryOp& a, const MemoryOp& b) {
      return times[a.task].end_s < times[b.task].end_s;  // stable: ties stay in program order
    });
    MemoryProfile& prof = profiles[i];
    prof.peak_device_bytes = 0;
    prof.peak_task = kNoId;
    prof.at_peak = MemoryBreakdown();
    prof.peak_host_bytes = 0;
    MemoryBreakdown device;
    int64_t device_total = 0, host = 0;
    for (const MemoryOp& op : rank_ops) {
      if (op.device) {
        int64_t& live = device.bytes[static_cast<int>(op.role)];
        live = checked_add(live, op.delta_bytes, "a rank's memory");
        device_total = checked_add(device_total, op.delta_bytes, "a rank's memory");
        if (device_total > prof.peak_device_bytes) {
          prof.peak_device_bytes = device_total;
          prof.peak_task = op.task;
          prof.at_peak = device;
        }
      } else {
        host = checked_add(host, op.delta_bytes, "a rank's host memory");
        prof.peak_host_bytes = std::max(prof.peak_host_bytes, host);
      }
    }
    std::vector<MemoryOp>().swap(rank_ops);
  }
  return profiles;
}

}  // namespace

std::vector<MemoryProfile> pipeline_memory_profiles(const Schedule& s, int rank,
                                                    const std::function<void(const Program&)>& on_program) {
  return walk(s, rank, roofline_cost(s), on_program);
}

PeakRange pipeline_peak_range(const Schedule& s, int rank) {
  const int stage = s.grid().coord(rank).pp;
  const TaskCost roofline = roofline_cost(s);
  // The rank's own tasks slowed so far that one of them outlasts the peers' whole step: a compute
  // task costs at least the cluster's kernel launch (microseconds: x1e9 is a quarter of an hour
  // and more), a transfer its link latency, longer than any step of the rest.
  constexpr double kSlower = 1e9;
  const TaskCost self_slow = [&roofline, rank](int r, const Program& p, const Task& t) {
    const double time = roofline(r, p, t);
    return r == rank ? time * kSlower : time;
  };
  PeakRange range;
  range.least_bytes = walk(s, rank, self_slow, {}).at(stage).peak_device_bytes;
  std::vector<Program> programs;
  for (int r : pipeline_ranks(s, rank)) programs.push_back(s.program(r));
  range.most_bytes = worst_case_device_peak(s, programs, rank);
  return range;
}

}  // namespace tandem
