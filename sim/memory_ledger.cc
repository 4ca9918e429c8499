#include "sim/memory_ledger.h"

#include <algorithm>
#include <string>

#include "shared/error.h"

namespace tandem::sim {

MemoryLedger::MemoryLedger(const Schedule& schedule, const SimOptions& options, const Platform& platform,
                           SimResult& result)
    : options_(options),
      platform_(platform),
      cluster_(schedule.scenario().cluster),
      result_(result),
      hbm_bytes_(cluster_.hbm_bytes()) {
  const int n = schedule.world_size();
  node_host_bytes_.assign((n + platform_.gpus_per_node() - 1) / platform_.gpus_per_node(), 0);
}

void MemoryLedger::add_unit(const ProgramInfo& info, RankStats& stats, std::vector<std::pair<int, int>> nodes) {
  UnitMemory& u = units_.emplace_back();
  u.nodes = std::move(nodes);
  u.live.assign(info.program.buffers.size(), 0);
  u.device_bytes = options_.reserved_device_bytes;
  stats.peak_device_bytes = u.device_bytes;
}

void MemoryLedger::record(const UnitMemory& u, int rank, double now) {
  if (options_.record_memory)  // once per unit, under lane 0's rank (SimResult::memory)
    result_.memory.push_back({rank, now, u.device_bytes, u.host_bytes});
}

void MemoryLedger::apply(int unit, int rank, const ProgramInfo& info, const Task& t, bool alloc, double now,
                         RankStats& stats) {
  UnitMemory& u = units_[unit];
  const uint32_t idx = info.task_buffer[t.id];
  const int64_t fast = info.device_bytes[idx];  // > 0: a device buffer (compact copy of Buffer)
  if (fast > 0 && alloc != bool(u.live[idx]) && (!alloc || hbm_bytes_ <= 0 || u.device_bytes + fast <= hbm_bytes_)) {
    u.live[idx] = alloc;
    u.device_bytes += alloc ? fast : -fast;
    stats.peak_device_bytes = std::max(stats.peak_device_bytes, u.device_bytes);
    record(u, rank, now);
    return;
  }
  const BufferId id = alloc ? std::get<Alloc>(t.op).buffer : std::get<Free>(t.op).buffer;
  const Buffer& b = info.program.buffers[idx];
  if (b.is_view() || b.placement == Placement::kNvme) return;
  if (alloc == bool(u.live[idx]))
    throw Error("schedule: " + rank_task(rank, t.id) + (alloc ? " allocates buffer '" : " frees buffer '") + b.name +
                "' (" + std::to_string(id) + ")" + (alloc ? " that is already live" : " that is not live"));
  u.live[idx] = alloc;
  const int64_t delta = alloc ? b.bytes : -b.bytes;
  if (b.placement == Placement::kDevice) {
    if (alloc && u.device_bytes + b.bytes > cluster_.hbm_bytes() && cluster_.hbm_bytes() > 0) {
      u.live[idx] = 0;
      out_of_memory(u, rank, info, b, false, u.device_bytes, cluster_.hbm_bytes(), now);
    }
    u.device_bytes += delta;
    stats.peak_device_bytes = std::max(stats.peak_device_bytes, u.device_bytes);
  } else {
    const int64_t cap = static_cast<int64_t>(cluster_.host_memory_gib * 1073741824.0);
    // Each node the unit's lanes lie on is charged for its own lanes (a tp unit lies on one node; a
    // replica-folded unit may span several).
    for (const auto& [k, lanes] : u.nodes)
      if (alloc && cap > 0 && node_host_bytes_[k] + int64_t(lanes) * b.bytes > cap) {
        u.live[idx] = 0;
        out_of_memory(u, rank, info, b, true, node_host_bytes_[k], cap, now);
      }
    for (const auto& [k, lanes] : u.nodes) node_host_bytes_[k] += int64_t(lanes) * delta;
    u.host_bytes += delta;
    stats.peak_host_bytes = std::max(stats.peak_host_bytes, u.host_bytes);
  }
  record(u, rank, now);
}

void MemoryLedger::out_of_memory(const UnitMemory& u, int rank, const ProgramInfo& info, const Buffer& b, bool host,
                                 int64_t in_use, int64_t capacity, double now) {
  OomReport& o = result_.oom_report;
  o.rank = rank, o.time_s = now, o.host = host, o.buffer = b.name;
  o.requested_bytes = b.bytes, o.in_use_bytes = in_use, o.capacity_bytes = capacity;
  const Placement where = host ? Placement::kHost : Placement::kDevice;
  for (size_t i = 0; i < u.live.size(); ++i) {
    const Buffer& lb = info.program.buffers[i];
    if (u.live[i] && lb.placement == where) o.live.push_back({lb.name, lb.role, lb.bytes});
  }
  std::stable_sort(o.live.begin(), o.live.end(), [](const LiveBuffer& a, const LiveBuffer& c) { return a.bytes > c.bytes; });
  throw OutOfMemory{};
}

}  // namespace tandem::sim
