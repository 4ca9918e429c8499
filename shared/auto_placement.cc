#include "shared/auto_placement.h"

#include <limits>
#include <variant>

#include "shared/error.h"
#include "shared/memory_timeline.h"

namespace tandem {
namespace {

// The bucket whose whole parameter buffer ("B<k>.params") holds `id`, or -1.
int bucket_of(const Program& p, BufferId id) {
  while (p.buffers[id].is_view()) id = p.buffers[id].view_of;
  const std::string& n = p.buffers[id].name;
  if (n.size() < 9 || n[0] != 'B' || n.compare(n.size() - 7, 7, ".params") != 0) return -1;
  int k = 0;
  for (size_t i = 1; i + 7 < n.size(); ++i) {
    if (n[i] < '0' || n[i] > '9') return -1;
    k = k * 10 + (n[i] - '0');
  }
  return k;
}

std::string describe(const Program& p, TaskId t) {
  const Task& task = p.tasks.at(t);
  std::string s = "task " + std::to_string(t) + " (" + to_string(task.stream) + " stream";
  if (const Alloc* a = std::get_if<Alloc>(&task.op)) s += ", allocating " + p.buffers[a->buffer].name;
  return s + ")";
}

}  // namespace

AutoPlacement plan_auto_placement(const Scenario& sc, int chunks, int64_t largest_chunk_bytes,
                                  const std::function<Program(const std::vector<bool>&)>& generate) {
  AutoPlacement r;
  r.host.assign(chunks, false);
  r.cap_bytes = static_cast<int64_t>(kAutoDeviceCapRatio * double(sc.cluster.hbm_bytes()));
  const int64_t warmup_cap = static_cast<int64_t>(kAutoWarmupModelDataRatio * double(sc.cluster.hbm_bytes()));
  if (largest_chunk_bytes > warmup_cap)
    throw Error(sc.origin + ": strategy.offload auto: Gemini's warm-up iteration lets model data use 0.2 x HBM (" +
                    std::to_string(warmup_cap) + " bytes, cluster.hbm_gib " + std::to_string(sc.cluster.hbm_gib) +
                    ") and the largest chunk gathered needs " + std::to_string(largest_chunk_bytes) +
                    " bytes (lower strategy.chunk_min_m or strategy.chunk_search_range_m)",
                ErrorKind::kOutOfMemory);
  for (int round = 0;; ++round) {
    const Program p = generate(r.host);
    const MemoryProfile m = memory_profile(p);
    if (round == 0) r.warmup_peak_bytes = m.peak_device_bytes;
    r.peak_device_bytes = m.peak_device_bytes;
    if (m.peak_device_bytes <= r.cap_bytes) return r;
    // Belady: the device chunk whose next use by a kernel after the peak is furthest away.
    std::vector<TaskId> next(chunks, std::numeric_limits<TaskId>::max());
    std::vector<char> seen(chunks, 0);
    for (TaskId t = m.peak_task + 1; t < p.tasks.size(); ++t)
      if (const Compute* c = std::get_if<Compute>(&p.tasks[t].op))
        for (BufferId in : c->inputs) {
          const int k = bucket_of(p, in);
          if (k < 0 || k >= chunks || seen[k]) continue;
          seen[k] = 1;
          next[k] = t;
        }
    int victim = -1;
    for (int k = 0; k < chunks; ++k) {
      const int c = chunks - 1 - k;  // buckets are in backward order, chunks in execution order
      if (r.host[c]) continue;
      if (victim < 0 || next[k] > next[chunks - 1 - victim]) victim = c;
    }
    if (victim < 0) {
      const MemoryBreakdown& b = m.at_peak;
      const int64_t model = b[BufferRole::kParam] + b[BufferRole::kGrad] + b[BufferRole::kOptimizer];
      throw Error(sc.origin + ": strategy.offload auto: no placement fits: with every chunk on the host, rank " +
                      std::to_string(p.rank) + " needs " + std::to_string(m.peak_device_bytes) + " bytes at " +
                      describe(p, m.peak_task) + " (" + std::to_string(m.peak_device_bytes - model) +
                      " of them non-model), and HBM less the 10 % margin is " + std::to_string(r.cap_bytes) +
                      " bytes (cluster.hbm_gib " + std::to_string(sc.cluster.hbm_gib) + ")",
                  ErrorKind::kOutOfMemory);
    }
    r.host[victim] = true;
  }
}

}  // namespace tandem
